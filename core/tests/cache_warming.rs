//! Cache warming in the session machine (Pi 1.5.2's `CacheWarmer`), driven by scripts with
//! times: when a warm request goes out, what it writes, and when warming stops.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent_session::warming_delay_ms;
use pi_core::script::{parse, Driver};
use pi_core::session::entry::SessionEntry;

/// A model whose 12 s prompt cache gives a 2 s delay, priced so that warming pays even idle
/// (0.15 × $100 of a miss against a free cache read).
const WARM: &str = "session: cacheWarming=idle promptCache=12 inputPrice=1000";

fn drive(script: &str) -> Driver {
    let mut driver = Driver::default();
    for line in parse(script).unwrap() {
        driver
            .line(&line)
            .unwrap_or_else(|e| panic!("{e}\n{}", driver.transcript().join("\n")));
    }
    driver
}

fn calls(driver: &Driver) -> usize {
    driver
        .transcript()
        .iter()
        .filter(|l| l.contains("-> call_model"))
        .count()
}

fn usage_entries(driver: &Driver) -> Vec<SessionEntry> {
    let machine = driver.session().unwrap();
    machine
        .tree()
        .entries()
        .iter()
        .filter(|e| matches!(e, SessionEntry::Usage(_)))
        .cloned()
        .collect()
}

fn answered(setup: &str) -> String {
    format!("{setup}\nuser: Hello\nmodel: usage=100000/10 text Hi there.\n")
}

#[test]
fn the_delay_is_pis() {
    assert_eq!(warming_delay_ms(300_000), Some(270_000));
    assert_eq!(warming_delay_ms(12_000), Some(2_000));
    assert_eq!(warming_delay_ms(3_600_000), Some(3_240_000));
    assert_eq!(warming_delay_ms(10_000), None);
    assert_eq!(warming_delay_ms(10_001), Some(1));
}

#[test]
fn a_warm_goes_out_at_the_delay_and_writes_a_usage_entry() {
    let mut driver = drive(&answered(WARM));
    let machine = driver.session().unwrap();
    assert!(!machine.is_busy(), "warming does not keep the session busy");
    assert!(machine.is_warming());
    let settled_at = driver.transcript().len();
    assert!(driver.transcript()[..settled_at]
        .iter()
        .any(|l| l.contains("wake_at +2000")));
    for line in parse("tick 1999").unwrap() {
        driver.line(&line).unwrap();
    }
    assert_eq!(calls(&driver), 1, "not before the delay");
    for line in parse("tick 1").unwrap() {
        driver.line(&line).unwrap();
    }
    assert_eq!(calls(&driver), 2, "the warm request at the delay");
    let warm = driver
        .transcript()
        .iter()
        .rev()
        .find(|l| l.contains("-> call_model"))
        .unwrap();
    let first = driver
        .transcript()
        .iter()
        .find(|l| l.contains("-> call_model"))
        .unwrap();
    let request = |line: &str| line.split_once(" tools=").map(|(_, r)| r.to_owned());
    assert_eq!(request(warm), request(first), "the same request again");
    for line in parse("model: usage=100000/1 text H").unwrap() {
        driver.line(&line).unwrap();
    }
    let usages = usage_entries(&driver);
    assert_eq!(usages.len(), 1);
    let SessionEntry::Usage(usage) = &usages[0] else {
        unreachable!()
    };
    assert_eq!(usage.kind, "cache_warm");
    assert_eq!(usage.usage.input, 100_000);
    let machine = driver.session().unwrap();
    let answer = machine
        .tree()
        .entries()
        .iter()
        .rfind(|e| e.message().is_some())
        .unwrap();
    assert_eq!(usage.parent_id.as_deref(), Some(answer.id()));
    assert_eq!(
        machine.agent().messages().len(),
        2,
        "the reply is no message"
    );
    let appended = driver
        .transcript()
        .iter()
        .filter(|l| l.contains("entry_appended") && l.contains("cache_warm"))
        .count();
    assert_eq!(appended, 1);
    assert!(!driver
        .transcript()
        .iter()
        .rev()
        .take(4)
        .any(|l| l.contains("message_start")));
    assert!(driver
        .transcript()
        .last()
        .unwrap()
        .contains("wake_at +2000"));
}

#[test]
fn nothing_warms_when_off_or_without_a_prompt_cache() {
    for setup in [
        "session: cacheWarming=off promptCache=12 inputPrice=1000",
        "session: cacheWarming=idle inputPrice=1000",
        "session: promptCache=12 inputPrice=1000",
    ] {
        let driver = drive(&(answered(setup) + "tick 5000\ntick 60000\n"));
        assert_eq!(calls(&driver), 1, "{setup}");
        assert!(!driver.session().unwrap().is_warming(), "{setup}");
        assert_eq!(driver.session().unwrap().wake_at(), None, "{setup}");
    }
}

#[test]
fn a_changed_conversation_stops_warming() {
    // A model switch: the request's model is no longer the agent's.
    let driver = drive(&(answered(WARM) + "set-model: other\ntick 2000\n"));
    assert_eq!(calls(&driver), 1);
    assert!(!driver.session().unwrap().is_warming());
    // A manual compaction replaces the transcript.
    let setup = format!("{WARM} keepRecentTokens=5");
    let driver = drive(
        &(answered(&setup)
            + "user: More\nmodel: usage=100000/10 text More.\ncompact:\nmodel: text Summary.\ntick 2000\n"),
    );
    let machine = driver.session().unwrap();
    assert!(usage_entries(&driver).is_empty());
    assert!(!machine.is_warming());
}

#[test]
fn a_new_request_replaces_the_run_and_cancels_its_warm() {
    let driver = drive(&(answered(WARM) + "tick 2000\nuser: Again\n"));
    let transcript = driver.transcript().join("\n");
    assert!(transcript.contains("-> cancel"), "{transcript}");
    // The cancelled warm's answer is dropped; the new request is answered as usual.
    let mut driver = driver;
    for line in
        parse("model: usage=100000/10 text Again.\ntick 2000\nmodel: usage=1/1 text W").unwrap()
    {
        driver.line(&line).unwrap();
    }
    let machine = driver.session().unwrap();
    assert_eq!(machine.agent().messages().len(), 4);
    assert_eq!(usage_entries(&driver).len(), 1);
}

#[test]
fn idle_warming_stops_after_thirty_minutes() {
    // A 300 s cache: a warm every 270 s; the seventh would come after 1890 s > 30 min.
    let mut script = answered("session: cacheWarming=idle promptCache=300 inputPrice=1000");
    for _ in 0..8 {
        script.push_str("tick 270000\n");
        script.push_str("model: usage=100000/1 text W\n");
    }
    let mut driver = Driver::default();
    for line in parse(&script).unwrap() {
        // Once warming stopped there is no call left to answer.
        let _ = driver.line(&line);
    }
    assert_eq!(usage_entries(&driver).len(), 6);
    assert!(!driver.session().unwrap().is_warming());
}

#[test]
fn streaming_mode_stops_when_the_agent_settles() {
    let driver = drive(
        &(answered("session: cacheWarming=streaming promptCache=12 inputPrice=1000")
            + "tick 2000\n"),
    );
    assert_eq!(calls(&driver), 1);
    assert!(!driver.session().unwrap().is_warming());
}

#[test]
fn too_small_savings_or_a_missed_deadline_stop_warming() {
    // $1/M: 0.15 × $0.10 is below the $0.05 threshold.
    let driver = drive(
        &(answered("session: cacheWarming=idle promptCache=12 inputPrice=1") + "tick 2000\n"),
    );
    assert_eq!(calls(&driver), 1);
    assert!(!driver.session().unwrap().is_warming());
    // The timer fired after the refresh deadline (2 s + (12 s − 2 s) / 2).
    let driver = drive(&(answered(WARM) + "tick 7001\n"));
    assert_eq!(calls(&driver), 1);
    assert!(!driver.session().unwrap().is_warming());
    // At the deadline it is still on time.
    let driver = drive(&(answered(WARM) + "tick 7000\n"));
    assert_eq!(calls(&driver), 2);
}

#[test]
fn a_clock_near_its_end_does_not_overflow_the_warm_deadline() {
    // A recorded time is outside input: 6 s before the clock's end, the 2 s delay fits but
    // the refresh deadline (5 s after) does not; the run then ends at the clock's last value.
    let late = u64::MAX - 6_000;
    let driver = drive(&answered(&format!("{WARM}\ntick {late}")));
    assert_eq!(calls(&driver), 1);
}
