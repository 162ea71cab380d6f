# The two commands of the README. Everything they need is installed by these targets.
VENV ?= .venv

.PHONY: demo test install install-test lint bench

demo: install          ## install (+ mariadb-server as root), then run the whole seed system
	$(VENV)/bin/icetide demo

test: install-test     ## install (incl. MariaDB/PostgreSQL for the tests), then run all tests
	bash scripts/test.sh

install:
	bash scripts/install.sh

install-test:
	bash scripts/install.sh --test

lint: install-test
	$(VENV)/bin/ruff check . && $(VENV)/bin/mypy

bench: install-test
	$(VENV)/bin/python -m benchmarks.ingest
