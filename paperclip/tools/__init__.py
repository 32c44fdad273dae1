"""Server-owned tools: the catalog the model sees, and their execution in the control plane."""
