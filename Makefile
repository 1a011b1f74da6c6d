# Conveniences over scripts/dev.py, which needs only python3.
.PHONY: run test golden lock lint bench
run:
	python3 scripts/dev.py run
test:
	python3 scripts/dev.py test
golden:  # rewrite every recorded answer under tests/golden; the diff is the review
	python3 scripts/dev.py golden
lock:  # re-resolve requirements-*.lock from pyproject.toml (installs the pinned uv into .venv-lock)
	python3 scripts/dev.py lock
lint:
	.venv/bin/gpu-advisor kb lint
bench:  # about 10 minutes on 2 cores; writes bench/RESULTS.md
	.venv/bin/python -m bench.run
