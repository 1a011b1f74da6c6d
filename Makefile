# Conveniences over scripts/dev.py, which needs only python3.
.PHONY: run test lint
run:
	python3 scripts/dev.py run
test:
	python3 scripts/dev.py test
lint:
	.venv/bin/gpu-advisor kb lint
