"""The simulator: cigri's real almighty cycle (the same store, metascheduler, predictor and runner code)
against simulated clusters on a simulated clock, so that a simulated week takes seconds and scheduling
strategies are compared on the same workloads."""
