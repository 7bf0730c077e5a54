//! The real `vegas` binary as a child process, for the crash test and the load benchmark.
// Shared by the crash test and the load benchmark; each uses part of it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_vegas"))
}

/// A temporary data directory the server accepts: owner-only, as it requires.
pub fn private_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new().permissions(std::fs::Permissions::from_mode(0o700)).tempdir().unwrap()
}

/// Runs a `vegas` command on a data directory; panics with its output if it fails.
pub fn vegas(data: &Path, args: &[&str]) -> Output {
    let output =
        Command::new(binary()).arg("--data").arg(data).args(args).env("RUST_LOG", "warn").output().expect("vegas runs");
    assert!(output.status.success(), "vegas {args:?} failed:\n{}", String::from_utf8_lossy(&output.stderr));
    output
}

/// Runs a `vegas` command that must fail; its error output.
pub fn vegas_refused(data: &Path, args: &[&str]) -> String {
    let output =
        Command::new(binary()).arg("--data").arg(data).args(args).env("RUST_LOG", "warn").output().expect("vegas runs");
    assert!(!output.status.success(), "vegas {args:?} succeeded where it must fail");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A running `vegas serve` on a loopback port of its own.
pub struct ServerProcess {
    child: Child,
    pub addr: String,
    /// The back office's address (the operator's: `/metrics`).
    pub admin: String,
    pub data: PathBuf,
    extra: Vec<String>,
}

impl ServerProcess {
    pub fn start(data: &Path, extra: &[&str]) -> ServerProcess {
        let port = free_port();
        let admin = format!("127.0.0.1:{}", free_port());
        let mut server = ServerProcess {
            child: spawn(data, port, &admin, extra),
            addr: format!("127.0.0.1:{port}"),
            admin,
            data: data.into(),
            extra: extra.iter().map(|s| s.to_string()).collect(),
        };
        server.wait_until_healthy();
        server
    }

    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL: no shutdown, no flush, as a crash or a power cut would leave it.
    pub fn kill(&mut self) {
        self.child.kill().expect("the server can be killed");
        self.child.wait().unwrap();
    }

    /// SIGTERM, as a service manager stops it; then waits up to `limit` for it to exit: its exit status
    /// and how long it took.
    pub fn terminate(&mut self, limit: Duration) -> (std::process::ExitStatus, Duration) {
        let started = Instant::now();
        // SAFETY: kill takes plain integers; the pid is our own child's, not yet waited for.
        assert_eq!(unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) }, 0);
        while started.elapsed() < limit {
            if let Some(status) = self.child.try_wait().unwrap() {
                return (status, started.elapsed());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the server was still running {limit:?} after SIGTERM");
    }

    /// Starts the server again on the same port and data directory.
    pub fn restart(&mut self) {
        let port = self.addr.rsplit(':').next().unwrap().parse().unwrap();
        let extra: Vec<&str> = self.extra.iter().map(String::as_str).collect();
        self.child = spawn(&self.data, port, &self.admin, &extra);
        self.wait_until_healthy();
    }

    fn wait_until_healthy(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!(
                    "the server exited at start ({status}); its log is in {}",
                    self.data.join("server.log").display()
                );
            }
            if healthy(&self.addr) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the server did not answer /healthz within 60 s");
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn spawn(data: &Path, port: u16, admin: &str, extra: &[&str]) -> Child {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(data.join("server.log")).unwrap();
    Command::new(binary())
        .arg("--data")
        .arg(data)
        .args(["serve", "--addr", &format!("127.0.0.1:{port}"), "--admin-addr", admin, "--dist"])
        .arg(data.join("no-dist"))
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("the server starts")
}

fn healthy(addr: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect(addr) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200")
}
