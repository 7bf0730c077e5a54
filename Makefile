# Vegas task runner. `make run` starts the game on http://127.0.0.1:8080, `make test` runs every test.
# Tool installs are guarded: a second run skips what is present.

SHELL := /bin/bash
export PATH := $(CURDIR)/node_modules/.bin:$(HOME)/.cargo/bin:$(PATH)

.PHONY: run test test-rust bench tools

test: test-rust

test-rust:
	cargo test --locked

bench:
	cargo bench --locked --bench block

run:
	cargo run --locked --release -- serve
