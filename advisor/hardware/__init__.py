"""The hardware a run measured: this machine detected, a server's GPUs, memory bandwidth, what makes two runs one system."""
