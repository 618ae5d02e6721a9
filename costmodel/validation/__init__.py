"""Measurements against the model: run, read, compare and calibrate (DESIGN.md section 4).

- :mod:`.nccl_tests`: the nccl-tests output parser and its launcher;
- :mod:`.runner`: run nccl-tests sweeps, keeping every parsed row (step 1);
- :mod:`.torch_bench`: the torch.distributed benchmark job (torch, the ``validate`` extra);
- :mod:`.logread`: the one reader of logs and results files;
- :mod:`.compare`: measured against predicted collectives (step 3);
- :mod:`.calibrate`: latency and bandwidth fitted to measured collectives (step 4);
- :mod:`.fallback`: NCCL's socket fallback, recognised in a log;
- :mod:`.reference_runs`: the bundled runs' index (preset, nodes, GPUs per node per run).

Plain functions for the CLI's ``validate`` and ``calibrate`` commands and the Validate page.
"""
