"""The command line: `gpu-advisor` (cli.main), its request flags and its terminal tables."""
