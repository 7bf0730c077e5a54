# Vegas task runner. `make run`: the game on http://127.0.0.1:8080. `make test`: every test.
# Installs are guarded, so a second run skips what is present.

SHELL := /bin/bash
E2E := tests/e2e
export PATH := $(CURDIR)/$(E2E)/node_modules/.bin:$(HOME)/.cargo/bin:$(PATH)

.PHONY: run test test-suites repository tools dist bench bench-block bench-server bench-soak bench-soak-stalls bench-web preview update-baselines

tools:
	@rustup target list --installed | grep -q wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
	@trunk --version 2>/dev/null | grep -q 0.21.14 || cargo install --locked trunk@0.21.14
	@wasm-bindgen --version 2>/dev/null | grep -q 0.2.130 || cargo install wasm-bindgen-cli --version 0.2.130
	@[ -x $(E2E)/node_modules/.bin/wasm-opt ] && [ -x $(E2E)/node_modules/.bin/terser ] || (cd $(E2E) && npm ci --no-audit --no-fund)
	@[ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] || (apt-get update && apt-get install -y chromium chromium-driver)
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || (apt-get update && apt-get install -y postgresql)
	@command -v brotli >/dev/null || (apt-get update && apt-get install -y brotli)
	@python3 -c "import ensurepip" 2>/dev/null || (apt-get update && apt-get install -y python3-venv)
	@command -v curl >/dev/null || (apt-get update && apt-get install -y curl)
	@command -v openssl >/dev/null || (apt-get update && apt-get install -y openssl)
	@command -v sqlite3 >/dev/null || (apt-get update && apt-get install -y sqlite3)
	@command -v promtool >/dev/null || (apt-get update && apt-get install -y prometheus)
	@cargo modules --version 2>/dev/null | grep -q 0.27 || cargo install --locked cargo-modules@0.27.0
	@command -v patroni >/dev/null && command -v etcd >/dev/null || (apt-get update && apt-get install -y patroni etcd-server)

# The game in dist/, then the designers' preview in dist/preview/, the « Vérifier » page in dist/verifier/ and
# the « Jeu responsable » page in dist/jeu-responsable/ (Trunk empties dist/ first).
# The crates' sources as panic messages name them, without the machine's registry path: bytes every
# player downloads for nothing.
REGISTRY := $(firstword $(wildcard $(or $(CARGO_HOME),$(HOME)/.cargo)/registry/src/index.crates.io-*/))
dist: export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS = $(if $(REGISTRY),--remap-path-prefix=$(REGISTRY)=)
dist: tools
	cargo fetch --locked
	trunk build --release
	trunk build preview.html --release --dist dist/preview --public-url /preview/
	trunk build verify.html --release --dist dist/verifier --public-url /verifier/
	trunk build responsible.html --release --dist dist/jeu-responsable --public-url /jeu-responsable/

run: dist
	cargo run --release --locked -- serve --demo

# Every test, with a throw-away PostgreSQL cluster up for their length (tests/pg/cluster.sh): formatting and
# clippy first (native and wasm32), then the suites, PostgreSQL's included (ignored by a plain `cargo test`).
test: dist
	tests/pg/cluster.sh run -- $(MAKE) --no-print-directory test-suites

test-suites: repository
	cargo fmt --check
	tests/layering.sh
	cargo clippy --locked --all-targets -- -D warnings
	cargo clippy --locked --all-targets --features sqlite-gathered-wal -- -D warnings
	cargo clippy --locked --target wasm32-unknown-unknown --lib --bins -- -D warnings
	cargo clippy --locked --target wasm32-unknown-unknown --lib --bins --test web --features preview -- -D warnings
	cargo clippy --locked --target wasm32-unknown-unknown --lib --bins --features verify -- -D warnings
	cargo clippy --locked --target wasm32-unknown-unknown --lib --bins --features responsible -- -D warnings
	cargo test --locked -- --include-ignored
	cargo test --locked --features sqlite-gathered-wal --lib --test store --test crash -- sqlite acknowledged_purchases_survive_sigkill
	CHROMEDRIVER=/usr/bin/chromedriver cargo test --locked --target wasm32-unknown-unknown --features preview --test web
	cargo build --release --locked
	tests/contract/run.sh
	cd $(E2E) && node --test --test-concurrency=1 ./*.test.mjs

# The repository holds sources: no tracked file over 5 MB (a core dump, a profile, a build's output).
repository:
	@big=$$(git ls-files -z | xargs -0 -r stat -c '%s %n' | awk '$$1 > 5000000 { print $$2 " (" $$1 " bytes)" }'); \
	if [ -n "$$big" ]; then echo "tracked files over 5 MB: $$big" >&2; exit 1; fi

bench: bench-block bench-server bench-web

# One block of 1 500 000 tickets: time by phase, tickets/s, peak memory.
bench-block:
	cargo bench --locked --bench block

# Purchases/s and p50/p99 at 50 and 500 players against the real server on loopback, beside /healthz;
# the same while 20 000 due tickets are settled; a player with 20 000 tickets against a new one; then
# 1 and 2 instances on a throw-away PostgreSQL cluster.
bench-server: tools
	@command -v wrk >/dev/null || (apt-get update && apt-get install -y wrk)
	tests/pg/cluster.sh run -- cargo bench --locked --bench server

# One server never restarted: paced purchases for 10 minutes (5 000/s on SQLite, then 2 000/s on a throw-away
# PostgreSQL), each 30 s window's p50/p99/max beside the store's and the WAL's size. Not in `bench`: ~25 min.
bench-soak: tools
	tests/pg/cluster.sh run -- cargo bench --locked --bench soak

# The SQLite soak (90 s unless VEGAS_SOAK_SECONDS says) with a commit stalled 25 ms about once a second (a
# fail point, in a build of its own): what one stall of the disk costs the players, apart from how often
# the host stalls it (its last line: the purchases over 25 ms per commit over 10 ms).
bench-soak-stalls: tools
	FAILPOINTS='sqlite-commit=0.07%sleep(25)' VEGAS_SOAK_STORE=sqlite VEGAS_SOAK_SECONDS=$${VEGAS_SOAK_SECONDS:-90} \
		cargo bench --locked --features failpoints --bench soak

# The app's transfer size on the wire, and the time of one pointer move over a scratch zone.
bench-web: dist
	cargo build --release --locked
	cd $(E2E) && node bench.mjs

# Designers: the preview on http://127.0.0.1:8082/, rebuilt and reloaded on every change.
preview: tools
	cargo fetch --locked
	trunk serve preview.html --dist target/preview-dist

# After an intended visual change: rewrite the preview's screenshot baselines (then look at them and commit).
update-baselines: dist
	cd $(E2E) && UPDATE_BASELINES=1 node --test preview.test.mjs
