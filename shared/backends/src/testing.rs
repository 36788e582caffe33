//! Backends for tests: where the real services of a test run are, and fresh isolated
//! databases on them. Used by the conformance suites and the end-to-end tests. A suite
//! whose backend cannot be reached fails; nothing is skipped.

use sqlx::{Connection, Executor, PgConnection};

/// Base URL of the PostgreSQL server tests create their databases on.
pub fn postgres_url() -> String {
    std::env::var("REELFARM_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// AMQP URL of the RabbitMQ broker of the test run.
pub fn amqp_url() -> String {
    std::env::var("REELFARM_TEST_AMQP_URL").unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

/// URL of the Redis server of the test run.
pub fn redis_url() -> String {
    std::env::var("REELFARM_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// `s3://…` location of the test bucket, written by `scripts/garage start`.
pub fn s3_url() -> String {
    std::env::var("REELFARM_TEST_S3_URL")
        .expect("REELFARM_TEST_S3_URL is not set: run `scripts/garage start` and `source target/garage/env` (scripts/test does both)")
}

/// Creates an empty database with a unique name and returns its URL.
pub async fn fresh_postgres_database() -> String {
    let base = postgres_url();
    let name = format!("rf_test_{}", uuid::Uuid::new_v4().simple());
    let mut conn =
        PgConnection::connect(&base).await.unwrap_or_else(|e| panic!("PostgreSQL at {base} does not answer: {e}"));
    conn.execute(format!("CREATE DATABASE {name}").as_str()).await.expect("create test database");
    conn.close().await.ok();
    let (head, _) = base.rsplit_once('/').expect("postgres URL has a database path");
    format!("{head}/{name}")
}

/// Deletes the RabbitMQ queues and exchanges of a test deployment's `namespace`, so that
/// test runs do not pile quorum queues up on the broker.
pub async fn delete_amqp_namespace(namespace: &str) {
    if let Err(e) = crate::bus::delete_namespace(&amqp_url(), namespace).await {
        eprintln!("deleting the test namespace {namespace} failed: {e}");
    }
}
