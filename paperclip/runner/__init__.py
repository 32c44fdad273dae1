"""The runner: a separate process that hosts provider processes and bridges them to the control plane."""
