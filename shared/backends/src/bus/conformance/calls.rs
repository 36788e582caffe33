//! Calls on every adapter: answered once each, by any server, with their own answer;
//! unanswered calls time out, and a request that timed out is never served later.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{Env, PATIENCE};
use crate::bus::{BusError, Service};

const SHORT: Duration = Duration::from_millis(300);

pub(in crate::bus) async fn calls_are_answered_once_and_time_out_unserved(env: &mut Env) {
    let bus = env.bus.clone();
    let unserved = bus.call(Service::Preview, b"too early", SHORT).await;
    assert!(matches!(unserved, Err(BusError::NoAnswer(_))), "{unserved:?}");

    // Two servers, each prefixing its answer with its name; every body they see is kept.
    let seen = Arc::new(Mutex::new(Vec::<Vec<u8>>::new()));
    let mut servers = Vec::new();
    for name in ["a:", "b:"] {
        let mut calls = bus.serve(Service::Preview, 2).await.expect("serve");
        let seen = seen.clone();
        servers.push(tokio::spawn(async move {
            while let Some(call) = calls.next().await {
                seen.lock().unwrap().push(call.body.clone());
                if call.body == b"drop" {
                    continue;
                }
                let answer = [name.as_bytes(), &call.body].concat();
                call.answer(answer).await.expect("answer");
            }
        }));
    }
    let calls = (0..20).map(|i| {
        let bus = bus.clone();
        async move { (i, bus.call(Service::Preview, format!("{i}").as_bytes(), PATIENCE).await) }
    });
    for (i, answer) in futures::future::join_all(calls).await {
        let answer = String::from_utf8(answer.expect("answered")).unwrap();
        assert!(answer == format!("a:{i}") || answer == format!("b:{i}"), "call {i} got {answer}");
    }
    // Dropped unanswered: the caller's timeout.
    let dropped = bus.call(Service::Preview, b"drop", SHORT).await;
    assert!(matches!(dropped, Err(BusError::NoAnswer(_))), "{dropped:?}");
    for server in servers {
        server.abort();
    }
    let seen = seen.lock().unwrap();
    // A call dropped unanswered may be offered to another server while its caller waits.
    let answered: Vec<&Vec<u8>> = seen.iter().filter(|b| *b != b"drop").collect();
    assert_eq!(answered.len(), 20, "each answered call served once");
    assert!(seen.iter().any(|b| b == b"drop"));
    assert!(!seen.iter().any(|b| b == b"too early"), "a call that timed out is not served later");
}
