//! The SQLite store's one writer, with group commit.
//!
//! SQLite lets one connection write at a time, and with `synchronous=FULL` each commit waits for an
//! fsync (about a millisecond here). So one thread owns the write connection and takes the writes that
//! queue up while the previous group is committing: it runs them in one transaction, each inside its
//! own savepoint (a write that fails is rolled back alone and the others still commit), commits once,
//! and only then answers each caller. A caller is never told that something is done before it is
//! durable, and one fsync serves the whole group.
//!
//! Reads do not come here: WAL readers (the store's pool) never wait for the writer.

use super::super::StoreError;
use rusqlite::Connection;
use std::panic::{AssertUnwindSafe, catch_unwind};
use tokio::sync::{mpsc, oneshot};

/// The most writes committed together: enough to absorb a burst, small enough that the first caller
/// of a group does not wait long for the last.
const MAX_GROUP: usize = 256;
/// Writes waiting beyond this make callers wait to enqueue (backpressure instead of unbounded memory).
const QUEUE: usize = 4096;

/// What the writer thread owns: the connection and whatever state writes may keep between them.
pub struct WriterContext<S> {
    pub conn: Connection,
    pub state: S,
}

/// A write, type-erased. Given the context, it runs and says whether it succeeded (so that a failure is
/// rolled back to its savepoint); given none (its group is already lost), it does not run. Either way
/// it leaves the callback that answers its caller once the group's commit is known.
type Job<S> = Box<dyn FnOnce(Option<&mut WriterContext<S>>) -> (bool, Answer) + Send>;
type Answer = Box<dyn FnOnce(Result<(), StoreError>) + Send>;

pub struct Writer<S> {
    jobs: mpsc::Sender<Job<S>>,
}

impl<S: Send + 'static> Writer<S> {
    /// Starts the writer thread; `after_commit` runs on it after each group (see `checkpoint`).
    pub fn start(conn: Connection, state: S, after_commit: impl Fn(&Connection) + Send + 'static) -> Result<Writer<S>, StoreError> {
        let (jobs, queue) = mpsc::channel(QUEUE);
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || {
                ask_for_short_slices();
                run(WriterContext { conn, state }, queue, after_commit)
            })
            .map_err(|e| StoreError::Backend(format!("cannot start the writer thread: {e}")))?;
        Ok(Writer { jobs })
    }

    /// Runs `write` in the writer's next group; returns its result once the group is durable.
    pub async fn write<T: Send + 'static>(&self, write: impl FnOnce(&mut WriterContext<S>) -> Result<T, StoreError> + Send + 'static) -> Result<T, StoreError> {
        let (reply, answer) = oneshot::channel();
        let job: Job<S> = Box::new(move |context| {
            let result = match context {
                Some(context) => catch_unwind(AssertUnwindSafe(|| write(context))).unwrap_or_else(|_| Err(StoreError::Backend("a write panicked".into()))),
                None => Err(StoreError::Backend("not run: its group of writes failed".into())),
            };
            let succeeded = result.is_ok();
            let answer: Answer = Box::new(move |commit| {
                let _ = reply.send(commit.and(result));
            });
            (succeeded, answer)
        });
        self.jobs.send(job).await.map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

/// The CPU time the writer asks to run in before another thread may take the core back: the kernel's
/// least (100 µs) instead of its default (1.4 ms here). Every sale waits for this one thread, and on a
/// host whose cores the HTTP workers keep busy, the writer woken by its fsync waited 3 to 4 ms for a
/// core each time (`perf sched timehist`), and a commit that waits for the disk twice that way is a
/// commit over 10 ms. Asked with a shorter slice, the kernel (EEVDF, Linux 6.12 and later) lets the
/// writer take the core as soon as it wakes. `make bench-soak`, 90 s runs alternated, on a busy host:
/// commits over 10 ms 62 and 25 a run → 32 and 12, purchases over 25 ms 13 097 and 10 328 → 9 998 and
/// 2 724 (ARCHITECTURE « SQLite »). Needs no privilege; where the kernel does not know the request,
/// the writer runs as before.
const WRITER_SLICE_NANOS: u64 = 100_000;

/// The calling thread's scheduling, as the kernel reports it.
#[cfg(target_os = "linux")]
fn scheduling() -> std::io::Result<libc::sched_attr> {
    // SAFETY: `sched_attr` is plain integers, for which all zeroes is a value.
    let mut attr: libc::sched_attr = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::sched_attr>() as libc::c_uint;
    // SAFETY: the kernel writes at most `size` bytes into `attr`; tid 0 is the calling thread.
    match unsafe { libc::syscall(libc::SYS_sched_getattr, 0, &raw mut attr, size, 0) } {
        0 => Ok(attr),
        _ => Err(std::io::Error::last_os_error()),
    }
}

#[cfg(target_os = "linux")]
fn ask_for_short_slices() {
    let mut attr = match scheduling() {
        Ok(attr) => attr,
        Err(e) => return tracing::info!(error = %e, "the writer's scheduling is unknown: it keeps its time slice"),
    };
    // A policy the operator chose (real-time, batch) and the process's nice value stay as they are.
    if attr.sched_policy != libc::SCHED_OTHER as u32 {
        return;
    }
    attr.size = std::mem::size_of::<libc::sched_attr>() as u32;
    attr.sched_flags = 0;
    attr.sched_runtime = WRITER_SLICE_NANOS;
    // SAFETY: `attr` is a valid `sched_attr` whose `size` says how much of it the kernel may read.
    if unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &raw const attr, 0) } != 0 {
        tracing::info!(error = %std::io::Error::last_os_error(), "the kernel keeps the writer's default time slice");
    }
}

#[cfg(not(target_os = "linux"))]
fn ask_for_short_slices() {}

fn stopped() -> StoreError {
    StoreError::Backend("the store's writer has stopped".into())
}

fn run<S>(mut context: WriterContext<S>, mut queue: mpsc::Receiver<Job<S>>, after_commit: impl Fn(&Connection)) {
    let mut group = Vec::with_capacity(MAX_GROUP);
    let mut answers = Vec::with_capacity(MAX_GROUP);
    while let Some(first) = queue.blocking_recv() {
        group.push(first);
        while group.len() < MAX_GROUP {
            match queue.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let outcome = commit_group(&mut context, group.drain(..), &mut answers);
        if let Err(e) = &outcome {
            tracing::error!(error = %e, writes = answers.len(), "a group of writes failed to commit");
        }
        for answer in answers.drain(..) {
            answer(outcome.clone());
        }
        after_commit(&context.conn);
    }
}

/// Runs a group in one transaction, each write in its own savepoint, and commits it.
fn commit_group<S>(context: &mut WriterContext<S>, group: impl Iterator<Item = Job<S>>, answers: &mut Vec<Answer>) -> Result<(), StoreError> {
    let backend = |what: &str, e: rusqlite::Error| StoreError::Backend(format!("{what}: {e}"));
    if let Err(e) = context.conn.execute_batch("BEGIN IMMEDIATE") {
        answers.extend(group.map(|job| job(None).1));
        return Err(backend("begin", e));
    }
    let mut failure = None;
    for job in group {
        if failure.is_none()
            && let Err(e) = context.conn.execute_batch("SAVEPOINT write")
        {
            failure = Some(backend("savepoint", e));
        }
        if failure.is_some() {
            answers.push(job(None).1);
            continue;
        }
        let (succeeded, answer) = job(Some(context));
        answers.push(answer);
        let close = if succeeded { "RELEASE write" } else { "ROLLBACK TO write; RELEASE write" };
        if let Err(e) = context.conn.execute_batch(close) {
            failure = Some(backend("savepoint", e));
        }
    }
    let result = match failure {
        Some(e) => Err(e),
        None => {
            // The checkpointer holds its next flush meanwhile (`vfs`): this fsync finds the disk free.
            let _committing = super::vfs::Committing::begin();
            let started = std::time::Instant::now();
            // A disk that stalls this fsync, on demand: `make bench-soak-stalls`.
            fail::fail_point!("sqlite-commit");
            let committed = context.conn.execute_batch("COMMIT").map_err(|e| backend("commit", e));
            metrics::histogram!("vegas_sqlite_commit_seconds").record(started.elapsed().as_secs_f64());
            committed
        }
    };
    if result.is_err() && !context.conn.is_autocommit() {
        let _ = context.conn.execute_batch("ROLLBACK");
    }
    result
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_writer_runs_in_short_slices_where_the_kernel_has_them() {
        let default = std::thread::spawn(|| scheduling().unwrap()).join().unwrap();
        let writer = Writer::start(Connection::open_in_memory().unwrap(), (), |_| {}).unwrap();
        let writers = writer.write(|_| Ok(scheduling().unwrap())).await.unwrap();
        assert_eq!(writers.sched_policy, default.sched_policy);
        assert_eq!(writers.sched_nice, default.sched_nice);
        // A kernel without time slices of its own (before 6.12) reports none and takes no request.
        if default.sched_runtime != 0 {
            assert_eq!(writers.sched_runtime, WRITER_SLICE_NANOS, "a thread's default slice is {} ns", default.sched_runtime);
        }
    }
}
