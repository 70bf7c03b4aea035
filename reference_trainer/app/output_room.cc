#include "reference_trainer/app/output_room.h"

#include "plugin/config_check.h"
#include "reference_trainer/app/output_file.h"

namespace gw::trainer {

void agree_on_room(Communicator& comm, const std::vector<OutputRoom>& outputs,
                   const FaultHook& fault) {
  std::vector<HeldRoom> held;  // through the agreement: every rank's at once
  agree_on_startup_errors(comm, [&] {
    if (fault) fault(FaultPhase::kRoom);
    for (const OutputRoom& o : outputs) {
      held.push_back(reserve_room(o.path, o.option, o.rotated, o.bytes));
    }
  });
}

}  // namespace gw::trainer
