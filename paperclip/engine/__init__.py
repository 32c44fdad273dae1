"""The run engine, control-plane side: wakes to runs, controllers and their fences, the tool journal."""
