//! The request parser never panics and never reserves what a request only
//! declares: random frames, mutated valid frames, malformed and huge
//! declared lengths, fed in random pieces. A counting allocator records the
//! largest single allocation made while parsing.

mod common;

use evendb_server::resp::{Limits, Parser};
use proptest::prelude::*;

#[path = "common/counting_alloc.rs"]
mod counting_alloc;

/// Feeds `input` to a parser in pieces cut at `cuts` (the way bytes arrive
/// from a socket), as the server does, until it errors or starves. Returns
/// the commands read and whether it ended in an error.
fn feed(input: &[u8], cuts: &[usize], limits: Limits) -> (usize, bool) {
    let mut parser = Parser::new(limits);
    let mut buf = Vec::new();
    let mut fed = 0;
    let mut commands = 0;
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
    points.push(input.len());
    points.sort_unstable();
    for p in points {
        buf.extend_from_slice(&input[fed..p.max(fed)]);
        fed = fed.max(p);
        loop {
            match parser.next(&buf) {
                Ok((n, cmd)) => {
                    buf.drain(..n);
                    if cmd.is_some() {
                        commands += 1;
                    } else if n == 0 {
                        break;
                    }
                }
                Err(_) => return (commands, true),
            }
        }
    }
    (commands, false)
}

fn frame(args: &[Vec<u8>]) -> Vec<u8> {
    let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    common::Client::encode(&args)
}

/// Inputs that look like requests: valid frames, then bytes flipped,
/// inserted or dropped, and headers that declare huge sizes.
fn requestish() -> impl Strategy<Value = Vec<u8>> {
    let args = prop::collection::vec(prop::collection::vec(any::<u8>(), 0..20), 1..6);
    let frames =
        prop::collection::vec(args.prop_map(|a| frame(&a)), 1..4).prop_map(|fs| fs.concat());
    let header = prop_oneof![
        Just(b"*".to_vec()),
        Just(b"$".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"-1".to_vec()),
        Just(b"2147483647".to_vec()),
        Just(b"99999999999999999999".to_vec()),
        Just(b"9223372036854775807".to_vec()),
        Just(b"*1000000\r\n".to_vec()),
        Just(b"$1000000000\r\n".to_vec()),
        Just(b"*3\r\n$3\r\nSET\r\n$16777216\r\n".to_vec()),
    ];
    (
        frames,
        prop::collection::vec((any::<prop::sample::Index>(), header), 0..4),
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
    )
        .prop_map(|(mut bytes, inserts, flips)| {
            for (at, h) in inserts {
                let i = at.index(bytes.len() + 1);
                bytes.splice(i..i, h);
            }
            for (at, b) in flips {
                if !bytes.is_empty() {
                    let i = at.index(bytes.len());
                    bytes[i] = b;
                }
            }
            bytes
        })
}

/// Bytes of input beyond which the parser may allocate: what has arrived.
const SLACK: usize = 4096;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn random_bytes_never_panic(input in prop::collection::vec(any::<u8>(), 0..512),
                                cuts in prop::collection::vec(any::<usize>(), 0..6)) {
        counting_alloc::reset();
        feed(&input, &cuts, Limits::default());
        prop_assert!(counting_alloc::largest() <= input.len() * 2 + SLACK);
    }

    #[test]
    fn mutated_frames_never_panic_nor_reserve_declared_sizes(
        input in requestish(),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        counting_alloc::reset();
        feed(&input, &cuts, Limits::default());
        let largest = counting_alloc::largest();
        prop_assert!(
            largest <= input.len() * 2 + SLACK,
            "allocated {largest} bytes for {} bytes of input", input.len()
        );
    }

    #[test]
    fn valid_frames_parse_whole_in_any_pieces(
        frames in prop::collection::vec(
            prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 1..8), 1..10),
        cuts in prop::collection::vec(any::<usize>(), 0..10),
    ) {
        let input: Vec<u8> = frames.iter().map(|f| frame(f)).collect::<Vec<_>>().concat();
        let (n, failed) = feed(&input, &cuts, Limits::default());
        prop_assert!(!failed);
        prop_assert_eq!(n, frames.len());
    }
}

#[test]
fn huge_declared_sizes_are_refused_at_once_or_wait_without_allocating() {
    for head in [
        &b"*2147483647\r\n"[..],
        b"*1048576\r\n",
        b"*2\r\n$16777216\r\n",
        b"*1\r\n$1000000000\r\n",
        b"*9223372036854775807\r\n",
    ] {
        counting_alloc::reset();
        let (_, _failed) = feed(head, &[], Limits::default());
        let largest = counting_alloc::largest();
        assert!(
            largest < 64 << 10,
            "{:?}: allocated {largest} bytes",
            String::from_utf8_lossy(head)
        );
    }
}
