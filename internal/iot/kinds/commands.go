package kinds

// The system's commands (`continuum ...`) register with package cli from iotcmd; importing them
// here means the one line that installs the system's kinds (internal/systems/install) brings
// its commands too.
import _ "github.com/continuum-project/continuum/internal/iot/iotcmd"
