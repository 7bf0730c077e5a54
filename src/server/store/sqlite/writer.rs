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
    pub fn start(
        conn: Connection,
        state: S,
        after_commit: impl Fn(&Connection) + Send + 'static,
    ) -> Result<Writer<S>, StoreError> {
        let (jobs, queue) = mpsc::channel(QUEUE);
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || run(WriterContext { conn, state }, queue, after_commit))
            .map_err(|e| StoreError::Backend(format!("cannot start the writer thread: {e}")))?;
        Ok(Writer { jobs })
    }

    /// Runs `write` in the writer's next group; returns its result once the group is durable.
    pub async fn write<T: Send + 'static>(
        &self,
        write: impl FnOnce(&mut WriterContext<S>) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (reply, answer) = oneshot::channel();
        let job: Job<S> = Box::new(move |context| {
            let result = match context {
                Some(context) => catch_unwind(AssertUnwindSafe(|| write(context)))
                    .unwrap_or_else(|_| Err(StoreError::Backend("a write panicked".into()))),
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
fn commit_group<S>(
    context: &mut WriterContext<S>,
    group: impl Iterator<Item = Job<S>>,
    answers: &mut Vec<Answer>,
) -> Result<(), StoreError> {
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
