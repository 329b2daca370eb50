"""The simulated fleet (issue #4): `model` (the fleet file's Structs), `loading` (reading and
checking a fleet file), `objects` (what the fleet writes, pure builders), `controller` (when it
writes: the fake kubelets and DRA drivers); `python -m controllers.fleet` runs it alone."""

from controllers.fleet.controller import DEFAULT_WORKERS, NAME, FleetController, Simulator, factory, new
from controllers.fleet.loading import check, fleet_from_dict, load_fleet, parse_fleet
from controllers.fleet.model import Fleet, FleetError

__all__ = ["DEFAULT_WORKERS", "NAME", "Fleet", "FleetController", "FleetError", "Simulator", "check", "factory",
           "fleet_from_dict", "load_fleet", "new", "parse_fleet"]
