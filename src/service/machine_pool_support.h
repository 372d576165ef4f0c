#pragma once
// The service's view of machine pools (MachinePoolSupport, service.h) built from the autoscaler's
// instance catalog: the Service class takes it as functions, so that its tests can pass their own;
// the CLI and the server pass this one.
//
// Thread contract: the functions only read `catalog`, which must outlive them.

#include "autoscaler/autoscaler.h"
#include "service/service.h"

namespace gpupool::service {

// The service's view of machine pools through `catalog` (which must outlive the service): the
// instance type checked at write time, and the template node each pool would add.
MachinePoolSupport MachinePoolSupportFor(const autoscaler::Catalog& catalog);

}  // namespace gpupool::service
