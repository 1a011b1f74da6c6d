# Conveniences over scripts/dev.py, which needs only python3.
.PHONY: run test lint bench
run:
	python3 scripts/dev.py run
test:
	python3 scripts/dev.py test
lint:
	.venv/bin/gpu-advisor kb lint
bench:  # about 5 minutes on 2 cores; writes bench/RESULTS.md
	.venv/bin/python -m bench.run
