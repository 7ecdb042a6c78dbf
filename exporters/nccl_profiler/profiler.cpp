#include "exporters/nccl_profiler/profiler.h"

#include <algorithm>
#include <system_error>
#include <unistd.h>

#include "common/atomic_file.h"

namespace fabric::nccl_profiler {
namespace {

constexpr EventHandle kKernelChannelTag = 1;

uint64_t monotonic_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

void store_min(std::atomic<uint64_t>& target, uint64_t value) {
  uint64_t current = target.load(std::memory_order_relaxed);
  while (value < current &&
         !target.compare_exchange_weak(current, value, std::memory_order_relaxed)) {
  }
}

void store_max(std::atomic<uint64_t>& target, uint64_t value) {
  uint64_t current = target.load(std::memory_order_relaxed);
  while (value > current &&
         !target.compare_exchange_weak(current, value, std::memory_order_relaxed)) {
  }
}

// The operation's interval: from its first channel's start to its last channel's end, on
// the GPU's clock when the kernel reported both ends, else as the proxy thread saw them.
std::optional<BusyInterval> busy_interval(const EventSlot& slot) {
  uint64_t start = slot.gpu_start.load(std::memory_order_relaxed);
  uint64_t end = slot.gpu_end.load(std::memory_order_relaxed);
  if (start != UINT64_MAX && start != 0 && end > start) return BusyInterval{start, end, true};
  start = slot.cpu_start.load(std::memory_order_relaxed);
  end = slot.cpu_end.load(std::memory_order_relaxed);
  if (start != UINT64_MAX && end > start) return BusyInterval{start, end, false};
  return std::nullopt;
}

} // namespace

Profiler::Profiler(PluginConfig config, ProcessIdentity identity, LogFn log)
    : config_(std::move(config)), identity_(identity), log_(std::move(log)),
      pool_(config_.pool_slots) {
  for (const auto& warning : config_.warnings)
    log_(true, warning);
}

Profiler::~Profiler() {
  stop_flusher();
}

CommStats* Profiler::add_comm(const CommIdentity& identity) {
  // Whether a flusher runs follows the live count only if no finalize_comm can stop it
  // between this call's count and its start (a new communicator left without a flusher,
  // its file never rewritten): the two are serialized, flusher start and stop included.
  std::lock_guard lifecycle(lifecycle_mutex_);
  bool first = false;
  CommStats* stats = nullptr;
  {
    std::lock_guard lock(comms_mutex_);
    if (comms_.size() >= config_.max_comms && !evict_one_finalized()) {
      log_(true, "tracking " + std::to_string(comms_.size()) +
                     " communicators already; this one is not counted");
      return nullptr;
    }
    comms_.push_back(std::make_unique<CommRecord>(identity));
    stats = &comms_.back()->stats;
    first = live_comms_++ == 0;
    ever_had_comms_ = true;
  }
  if (first) start_flusher();
  return stats;
}

bool Profiler::evict_one_finalized() {
  for (auto it = comms_.begin(); it != comms_.end(); ++it) {
    // NCCL stops calling for a communicator before it finalizes it, but an operation it
    // never completed may still name the counters: keep those.
    if ((*it)->live || pool_.references(&(*it)->stats)) continue;
    comms_.erase(it);
    return true;
  }
  return false;
}

void Profiler::finalize_comm(CommStats* comm) {
  if (comm == nullptr) return;
  std::lock_guard lifecycle(lifecycle_mutex_);
  bool last = false;
  {
    std::lock_guard lock(comms_mutex_);
    for (auto& record : comms_) {
      if (&record->stats != comm || !record->live) continue;
      record->live = false;
      last = --live_comms_ == 0;
    }
  }
  if (last) {
    log_(false, "no communicator left; writing " + file_path() + " a last time");
    stop_flusher();
    flush();
  }
}

uint64_t Profiler::count_operation(CommStats* comm, Collective collective, unsigned element_size,
                                   uint64_t count) {
  uint64_t bytes = message_bytes(collective, count, element_size, comm->identity().nranks);
  comm->add_enqueued(collective, size_bucket(bytes), bytes);
  return bytes;
}

void* Profiler::start_operation(CommStats* comm, Collective collective, std::string_view datatype,
                                uint64_t count, unsigned nchannels) {
  if (comm == nullptr) return nullptr;
  uint64_t bytes = count_operation(comm, collective, datatype_size(datatype), count);
  unsigned bucket = size_bucket(bytes);
  // An operation's channels are at most NCCL's MAXCHANNELS (64, 128 in some builds); a
  // larger number would be a corrupted descriptor.
  nchannels = std::min(nchannels, 255u);
  EventSlot* slot = nullptr;
  EventHandle handle = pool_.claim(epoch_.load(std::memory_order_relaxed), 1 + nchannels, &slot);
  if (handle == 0) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  slot->channels_expected = static_cast<uint8_t>(nchannels);
  slot->collective = collective;
  slot->bucket = static_cast<uint8_t>(bucket);
  slot->stats = comm;
  slot->bytes = bytes;
  return reinterpret_cast<void*>(handle);
}

void* Profiler::start_kernel_channel(void* parent, uint64_t gpu_start) {
  auto handle = reinterpret_cast<EventHandle>(parent);
  if (handle & kKernelChannelTag) return nullptr;
  EventSlot* slot = pool_.open(handle);
  if (slot == nullptr) return nullptr;
  // A channel beyond those the descriptor announced (CollNet and SHARP run on channels
  // nChannels does not count) holds the operation open with a reference of its own, if
  // the operation has not completed already.
  uint16_t started = slot->channels_started.fetch_add(1, std::memory_order_relaxed) + 1;
  if (started > slot->channels_expected && !pool_.add_reference(handle)) return nullptr;
  // The proxy thread's clock only where the kernel gave no timestamp: reading it costs
  // about as much as the rest of the call.
  if (gpu_start != 0) {
    store_min(slot->gpu_start, gpu_start);
  } else {
    store_min(slot->cpu_start, monotonic_ns());
  }
  return reinterpret_cast<void*>(handle | kKernelChannelTag);
}

void Profiler::record_kernel_end(void* handle, uint64_t gpu_end) {
  auto value = reinterpret_cast<EventHandle>(handle);
  if ((value & kKernelChannelTag) == 0) return;
  if (EventSlot* slot = pool_.open(value & ~kKernelChannelTag)) store_max(slot->gpu_end, gpu_end);
}

void Profiler::stop(void* handle) {
  auto value = reinterpret_cast<EventHandle>(handle);
  EventHandle operation = value & ~kKernelChannelTag;
  if (value & kKernelChannelTag) {
    EventSlot* slot = pool_.open(operation);
    if (slot == nullptr) return;
    if (slot->cpu_start.load(std::memory_order_relaxed) != UINT64_MAX) {
      store_max(slot->cpu_end, monotonic_ns());
    }
  }
  if (pool_.release(operation)) complete(pool_.slot_of(operation));
}

void Profiler::complete(EventSlot* slot) {
  if (auto interval = busy_interval(*slot))
    slot->stats->add_timed(slot->collective, slot->bucket, slot->bytes, *interval);
  pool_.free(slot);
}

void Profiler::start_flusher() {
  std::lock_guard lock(thread_mutex_);
  if (flusher_.joinable()) return;
  try {
    flusher_ = std::jthread([this](std::stop_token stop) { run_flusher(stop); });
  } catch (const std::system_error& e) {
    log_(true, std::string("no flusher thread (") + e.what() +
                   "); the file is written only when the communicators are finalized");
  }
}

void Profiler::stop_flusher() {
  std::jthread thread;
  {
    std::lock_guard lock(thread_mutex_);
    thread = std::move(flusher_);
  }
  if (thread.joinable()) {
    thread.request_stop();
    thread.join();
  }
}

void Profiler::run_flusher(std::stop_token stop) {
  std::unique_lock lock(thread_mutex_);
  while (!stop.stop_requested()) {
    wake_.wait_for(lock, stop, config_.flush_interval, [] { return false; });
    if (stop.stop_requested()) break;
    lock.unlock();
    flush();
    lock.lock();
  }
}

bool Profiler::in_owner_process() const {
  return ::getpid() == identity_.pid;
}

ProcessProfile Profiler::snapshot() {
  ProcessProfile profile;
  profile.pid = identity_.pid;
  profile.pid_ns = identity_.pid_ns;
  profile.start_ticks = identity_.start_ticks;
  profile.written_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
  profile.interval_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(config_.flush_interval).count();
  profile.abi = abi_.load(std::memory_order_relaxed);
  profile.events_dropped = dropped_.load(std::memory_order_relaxed);
  profile.events_abandoned = abandoned_.load(std::memory_order_relaxed);
  std::lock_guard lock(comms_mutex_);
  for (auto& record : comms_)
    profile.comms.push_back(record->stats.snapshot());
  return profile;
}

std::string Profiler::file_path() const {
  return config_.dir + "/" +
         profile_file_name(identity_.pid, identity_.pid_ns, identity_.start_ticks);
}

void Profiler::flush() {
  if (!in_owner_process()) return;
  std::lock_guard lock(flush_mutex_);
  uint32_t epoch = epoch_.fetch_add(1, std::memory_order_relaxed) + 1;
  abandoned_.fetch_add(pool_.abandon_older_than(epoch, config_.abandon_after_flushes),
                       std::memory_order_relaxed);
  ProcessProfile profile = snapshot();
  profile.sequence = ++sequence_;
  auto written = write_file_atomic(file_path(), render_profile(profile), 0644);
  if (!written.ok() && !write_failure_logged_) {
    write_failure_logged_ = true;
    log_(true, "cannot write the NCCL statistics of this process: " + written.error().message() +
                   " (is the node's " + config_.dir + " mounted here? " + kDirEnv +
                   " names another directory); the job is not affected and this is not "
                   "logged again");
  }
}

void Profiler::shutdown() {
  if (!in_owner_process()) return;
  std::lock_guard lifecycle(lifecycle_mutex_);
  stop_flusher();
  bool write;
  {
    std::lock_guard lock(comms_mutex_);
    write = ever_had_comms_;
  }
  if (write) flush();
}

} // namespace fabric::nccl_profiler
