#include "exporters/rdma_collector.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "common/rdma_sysfs.h"
#include "exporters/rdma_counter_names.h"

namespace fabric::exporters {
namespace {

constexpr const char* kDeviceLabel = "device";

// hw_counters/lifespan is a setting (how long, in ms, the driver caches the values).
bool is_hw_setting(const std::string& name) {
  return name == "lifespan";
}

std::optional<uint64_t> parse_u64(std::string_view text) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

class PortReader {
public:
  PortReader(const SysfsReader& sysfs, MetricSink& sink, const std::string& device,
             const std::string& port)
      : sysfs_(sysfs), sink_(sink),
        dir_("class/infiniband/" + device + "/ports/" + port + "/"), labels_{{kDeviceLabel, device},
                                                                             {"port", port}} {}

  void read() {
    read_attributes();
    const bool has_counters = read_counters();
    read_hw_counters(has_counters);
  }

private:
  Labels with(const char* name, std::string value) const {
    Labels labels = labels_;
    labels.push_back({name, std::move(value)});
    return labels;
  }

  // The file's content, or nullopt after counting the error.
  std::optional<std::string> text(const std::string& relative) {
    auto content = sysfs_.read(dir_ + relative);
    if (!content.ok()) {
      sink_.error(content.error().message());
      return std::nullopt;
    }
    return std::move(*content);
  }

  std::optional<uint64_t> number(const std::string& relative) {
    auto content = text(relative);
    if (!content) return std::nullopt;
    auto value = parse_u64(*content);
    // "N/A (no PMA)" on devices without a performance management agent.
    if (!value) sink_.error(sysfs_.path(dir_ + relative) + ": not a counter: '" + *content + "'");
    return value;
  }

  void read_attributes() {
    std::string link_layer;
    if (auto v = text("link_layer")) link_layer = *v;
    std::string netdev;
    if (link_layer == "Ethernet") {
      // GID 0 is the port's own link-local GID, on the port's netdev.
      auto ndev = sysfs_.read_optional(dir_ + "gid_attrs/ndevs/0");
      if (ndev.ok() && *ndev) netdev = **ndev;
    }
    Labels info = with("link_layer", link_layer);
    info.push_back({"netdev", netdev});
    sink_
        .gauge("fabric_rdma_port_info",
               "An RDMA port: its link layer and, for RoCE, its netdev (value 1).")
        .add(std::move(info), 1);

    if (auto v = text("state")) {
      if (auto state = parse_port_state(*v)) {
        sink_
            .gauge("fabric_rdma_port_state",
                   "Logical port state: 1 down, 2 init, 3 armed, 4 active, 5 active_defer.")
            .add(labels_, *state);
      } else {
        sink_.error(sysfs_.path(dir_ + "state") + ": unexpected '" + *v + "'");
      }
    }
    if (auto v = text("phys_state")) {
      if (auto state = parse_port_state(*v)) {
        sink_
            .gauge("fabric_rdma_port_physical_state",
                   "Physical port state: 1 sleep, 2 polling, 3 disabled, 4 training, 5 link "
                   "up, 6 error recovery, 7 phy test.")
            .add(labels_, *state);
      } else {
        sink_.error(sysfs_.path(dir_ + "phys_state") + ": unexpected '" + *v + "'");
      }
    }
    if (auto v = text("rate")) {
      if (auto rate = parse_rate_bytes_per_second(*v)) {
        sink_
            .gauge("fabric_rdma_port_rate_bytes_per_second",
                   "Port rate (lane speed x width), in bytes per second.")
            .add(labels_, *rate);
      } else {
        sink_.error(sysfs_.path(dir_ + "rate") + ": unexpected '" + *v + "'");
      }
    }
    if (!netdev.empty()) {
      // sysfs has no MTU attribute for RDMA ports; a RoCE port's active MTU follows its
      // netdev's. A netdev in another namespace has no class/net entry here: no series.
      auto mtu = sysfs_.read_optional("class/net/" + netdev + "/mtu");
      if (mtu.ok() && *mtu) {
        auto value = parse_u64(**mtu);
        unsigned roce = value ? roce_mtu_for_netdev_mtu(static_cast<unsigned>(*value)) : 0;
        if (roce != 0) {
          sink_
              .gauge("fabric_rdma_port_active_mtu_bytes",
                     "Active RoCE MTU, derived from the netdev MTU as RoCE drivers do.")
              .add(labels_, roce);
        }
      }
    }
  }

  void present(const char* directory, bool present) {
    sink_
        .gauge("fabric_rdma_port_counters_present",
               "1 when the port has the counter directory (counters: IBTA PMA counters; "
               "hw_counters: the driver's own), else 0.")
        .add(with("directory", directory), present ? 1 : 0);
  }

  // Names in a counter directory; a missing one is "not present", not an error.
  std::optional<std::vector<std::string>> list(const std::string& directory) {
    auto names = sysfs_.list(dir_ + directory);
    if (!names.ok()) {
      sink_.error(names.error().message());
      return std::nullopt;
    }
    if (names->empty()) return std::nullopt;
    return std::move(*names);
  }

  void add_data(const PortDataCounter& data, uint64_t value) {
    const char* help = data.family == "fabric_rdma_port_data_bytes_total"
                           ? "Data bytes transmitted and received by the port."
                           : "Packets transmitted and received by the port.";
    sink_.counter(data.family, help)
        .add(with("direction", std::string(data.direction)),
             static_cast<double>(value) * data.scale);
  }

  bool read_counters() {
    auto names = list("counters");
    present("counters", names.has_value());
    if (!names) return false;
    for (const auto& name : *names) {
      auto data = port_data_counter(name);
      const bool error_counter = is_port_error_counter(name);
      const bool wait = name == "port_xmit_wait";
      if (!data && !error_counter && !wait) continue;
      auto value = number("counters/" + name);
      if (!value) continue;
      if (data) {
        add_data(*data, *value);
      } else if (wait) {
        // RoCE back-pressure: the port had data to send and PFC (or credits) held it.
        sink_
            .counter("fabric_rdma_port_transmit_wait_total",
                     "Ticks during which the port had data to send but sent none (IBTA "
                     "PortXmitWait, counters/port_xmit_wait): PFC pauses on RoCE.")
            .add(labels_, static_cast<double>(*value));
      } else {
        sink_
            .counter("fabric_rdma_port_errors_total",
                     "IBTA PMA error and discard counters of the port, by counter file name.")
            .add(with("counter", name), static_cast<double>(*value));
      }
    }
    return true;
  }

  void read_hw_counters(bool has_counters) {
    auto names = list("hw_counters");
    present("hw_counters", names.has_value());
    if (!names) return;
    for (const auto& name : *names) {
      if (is_hw_setting(name)) continue;
      auto mapped = hw_counter(name);
      auto data = has_counters ? std::nullopt : hw_data_counter(name);
      if (!mapped && !data) continue;
      auto value = number("hw_counters/" + name);
      if (!value) continue;
      if (data) {
        add_data(*data, *value);
      } else {
        sink_.counter(mapped->family, mapped->help).add(labels_, static_cast<double>(*value));
      }
    }
  }

  const SysfsReader& sysfs_;
  MetricSink& sink_;
  std::string dir_;
  Labels labels_;
};

// node_exporter's node_infiniband_info, with the same labels: which firmware runs where.
// A file the driver does not provide (rxe has no board_id) is an empty label.
void read_device_info(const SysfsReader& sysfs, MetricSink& sink, const std::string& device) {
  Labels labels{{kDeviceLabel, device}};
  for (const auto& [label, file] :
       {std::pair{"board_id", "board_id"}, std::pair{"firmware_version", "fw_ver"},
        std::pair{"hca_type", "hca_type"}}) {
    auto value = sysfs.read_optional("class/infiniband/" + device + "/" + file);
    if (!value.ok()) sink.error(value.error().message());
    labels.push_back({label, value.ok() && *value ? **value : std::string()});
  }
  sink.gauge("fabric_rdma_device_info",
             "An RDMA device: board id, firmware version and HCA type from sysfs (value 1).")
      .add(std::move(labels), 1);
}

} // namespace

std::optional<unsigned> parse_port_state(const std::string& text) {
  const std::size_t colon = text.find(':');
  auto value = parse_u64(std::string_view(text).substr(0, colon));
  if (!value || *value > 255) return std::nullopt;
  return static_cast<unsigned>(*value);
}

std::optional<double> parse_rate_bytes_per_second(const std::string& text) {
  // "<number> <unit>/sec (<width> <speed>)"; the kernel prints Gb/sec, older ones Mb/sec.
  const char* begin = text.c_str();
  char* end = nullptr;
  const double number = std::strtod(begin, &end);
  if (end == begin || number < 0) return std::nullopt;
  std::string_view rest(end);
  while (rest.starts_with(' '))
    rest.remove_prefix(1);
  if (rest.starts_with("Gb/sec")) return number * 1e9 / 8;
  if (rest.starts_with("Mb/sec")) return number * 1e6 / 8;
  return std::nullopt;
}

unsigned roce_mtu_for_netdev_mtu(unsigned netdev_mtu) {
  // GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4 (include/rdma/ib_addr.h).
  constexpr unsigned kHeaders = 96;
  if (netdev_mtu < kHeaders) return 0;
  const unsigned payload = netdev_mtu - kHeaders;
  for (unsigned mtu : {4096u, 2048u, 1024u, 512u, 256u}) {
    if (payload >= mtu) return mtu;
  }
  return 0;
}

Result<void> RdmaCollector::collect(MetricSink& sink) {
  std::vector<std::string> devices = devices_;
  if (devices.empty()) {
    FABRIC_ASSIGN_OR_RETURN(devices, rdma::list_sysfs_devices(sysfs_));
  }
  for (const auto& device : devices) {
    read_device_info(sysfs_, sink, device);
    auto ports = sysfs_.list("class/infiniband/" + device + "/ports");
    if (!ports.ok()) {
      sink.error(ports.error().message());
      continue;
    }
    if (ports->empty()) {
      // Listed a moment ago and gone now, or a configured device that does not exist.
      sink.error("RDMA device " + device + ": no ports under " +
                 sysfs_.path("class/infiniband/" + device));
      continue;
    }
    for (const auto& port : *ports) {
      if (!parse_u64(port)) continue;
      PortReader(sysfs_, sink, device, port).read();
    }
  }
  return Ok();
}

} // namespace fabric::exporters
