"""Control: rotor allocation, the geometric SE(3) controller, tendon allocation, references."""
