"""Names of the model's elements: the only place they are spelled out.

Everything else finds elements by these names, so a builder change cannot silently desynchronise
the controller, the scenarios or the renderer.
"""

from __future__ import annotations

QUAD_BODY = "quad"
ROOT_JOINT = "root"
GROUND = "ground"
HUB_GEOM = "hub"
FLANGE_GEOM = "flange"
TIP_BODY = "tip"
TIP_SITE = "tip"
TIP_GEOM = "tip_ball"
HOVER_KEY = "hover"
FLANGE_SITE = "flange_mount"  # on the arm's first link, at the hinge centre
FLANGE_FORCE = "flange_force"
FLANGE_TORQUE = "flange_torque"
TENDON_LETTERS = "abcdefghijklmnopqrstuvwxyz"  # a multi-section arm has up to 26 tendons
VEHICLE_PREFIX = "airframe/"  # the bodies, geoms and sites attached from an MJCF airframe


def rotor_site(j: int) -> str:
    return f"rotor{j}"


def rotor_actuator(j: int) -> str:
    return f"rotor{j}_thrust"


def boom_geom(j: int) -> str:
    return f"boom{j}"


def prop_geom(j: int) -> str:
    return f"prop{j}"


def link_body(k: int) -> str:
    return f"link{k}"


BASE_PIECE = "link_base"


def base_piece_geom() -> str:
    return f"{BASE_PIECE}_capsule"


def tendon_via_base(i: int) -> str:
    return f"tendon_{TENDON_LETTERS[i]}_via_base"


def link_geom(k: int) -> str:
    return f"link{k}_capsule"


def link_joint(k: int, axis: str) -> str:
    return f"link{k}_bend_{axis}"


def tendon(i: int) -> str:
    return f"tendon_{TENDON_LETTERS[i]}"


def tendon_anchor(i: int) -> str:
    return f"tendon_{TENDON_LETTERS[i]}_anchor"


def tendon_via(i: int, k: int) -> str:
    return f"tendon_{TENDON_LETTERS[i]}_via{k}"


def tendon_actuator(i: int) -> str:
    return f"tendon_{TENDON_LETTERS[i]}_tension"


# The payload (quadarm.model.payload): a free body and the weld that grasps it at the tip.
PAYLOAD_BODY = "payload"
PAYLOAD_JOINT = "payload_free"
PAYLOAD_GEOM = "payload_ball"
PAYLOAD_WELD = "payload_grasp"


WORLD_PREFIX = "world_"  # every element of a world object starts with it


def world_geom(name: str) -> str:
    """The geom of world object ``name``."""
    return f"{WORLD_PREFIX}{name}"


def world_body(name: str) -> str:
    """The moving body of a spring-mounted world object."""
    return f"{WORLD_PREFIX}{name}_plate"


def world_mount(name: str) -> str:
    """The slide joint of a spring-mounted world object (along its normal)."""
    return f"{WORLD_PREFIX}{name}_mount"


def world_arm_contact(name: str) -> str:
    """The contact sensor of the net wrench of world object ``name`` on the arm."""
    return f"{WORLD_PREFIX}{name}_on_arm"


def world_frame_contact(name: str) -> str:
    """The contact sensor counting the contacts of world object ``name`` with the airframe."""
    return f"{WORLD_PREFIX}{name}_on_frame"
