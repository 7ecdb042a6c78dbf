// How an attachment gives the pod its RoCE interface: the record's "mode" field, and
// fabric-cni's configuration of the same name.
#pragma once

namespace fabric::cni {

// shared: a macvlan on the RoCE netdev, RDMA devices visible in every namespace.
// exclusive: the whole netdev and its RDMA device move into the pod.
enum class Mode { kShared, kExclusive };

} // namespace fabric::cni
