// LivenessRegistry: tells whether the owner of a transaction lock is still
// alive (the role Chubby plays for Percolator).
//
// Every open of a registry is an *instance* with an id greater than that of
// every earlier instance over the same state; a transaction coordinator
// registers itself and gets an Owner, (instance id, token), which it writes
// into its locks and keeps fresh with Heartbeat. A lock resolver asks
// IsAlive(owner) before rolling back a lock whose TTL has not run out.
//
// Guarantees every implementation gives:
//   * Death is final: once IsAlive(owner) has answered false, or Heartbeat
//     has refused the owner, no later call answers true for it.
//   * An owner of this instance whose token has not been refreshed for
//     longer than the registry's timeout is dead.
//   * An owner of an instance that has ended is dead, at once, without
//     waiting for a timeout: its process (or engine) is gone, so its locks
//     can be resolved immediately. In the local registry every earlier
//     instance has ended (one instance is open at a time); in a registry
//     shared by processes (cluster/etcd_liveness_registry.h) an instance
//     ends when its process stops renewing it, and owners of another live
//     instance are alive (their tokens cannot be seen from here; a hung
//     coordinator is caught by its locks' TTL).
//
// An abstract interface, so that a remote registry can replace the local one
// (local_liveness_registry.h). Implementations are thread-safe.
#ifndef STRATA_TXN_LIVENESS_REGISTRY_H_
#define STRATA_TXN_LIVENESS_REGISTRY_H_

#include <cstdint>
#include <string>

#include "strata/status.h"

namespace strata::txn {

// Who holds a lock: an instance of the registry and a token within it.
// Token 0 and instance 0 are never issued.
struct Owner {
  // Intentionally copyable.
  uint64_t instance_id = 0;
  uint64_t token = 0;

  friend bool operator==(const Owner&, const Owner&) = default;
  // "instance/token", for messages.
  std::string ToString() const { return std::to_string(instance_id) + "/" + std::to_string(token); }
};

class LivenessRegistry {
 public:
  virtual ~LivenessRegistry() = default;

  // The id of this instance.
  virtual uint64_t instance_id() const = 0;

  // How long an owner stays alive without a Heartbeat (microseconds).
  // Coordinators heartbeat several times within it.
  virtual uint64_t timeout_micros() const = 0;

  // A new owner of this instance, alive as of now.
  virtual Result<Owner> Register() = 0;

  // Marks `owner` alive as of now. Aborted if it is already dead (timed out,
  // unregistered, or of another instance): the caller has lost its locks'
  // protection and must stop committing on their strength.
  virtual Status Heartbeat(const Owner& owner) = 0;

  // Ends `owner`'s life now. NotFound if it was not alive.
  virtual Status Unregister(const Owner& owner) = 0;

  // Whether `owner` is alive now. Only errors of the registry itself (a remote
  // one that cannot be reached, say) are returned as a Status; an unknown
  // owner is simply not alive.
  virtual Result<bool> IsAlive(const Owner& owner) = 0;
  // Whether this instance is surely alive now. A registry shared by
  // processes answers false from the moment its lease may have run out:
  // what the process published under the lease (its oldest running
  // transaction, which holds other processes' garbage collectors back) may
  // be gone, so its transactions must stop reading too. The local registry's
  // instance lives as long as it is open.
  virtual bool InstanceSurelyAlive() const { return true; }
};

}  // namespace strata::txn

#endif  // STRATA_TXN_LIVENESS_REGISTRY_H_
