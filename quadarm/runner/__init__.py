"""Running trials: one episode, and many in parallel."""
