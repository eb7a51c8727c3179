//! Key commands: `GET`, `SET`, `DEL`, `EXISTS`, `MGET`, `MSET`.

use super::{syntax, wrong_args, After, Failed, Reply};
use crate::cluster::{Request, Response, SetCond};
use crate::resp::Out;
use crate::state::Shared;

/// In a cluster, proposes `req` through the leader and returns what
/// applying it answered; `None` for a server without `--cluster`.
fn propose(
    shared: &Shared,
    keys: &[&[u8]],
    req: impl FnOnce() -> Request,
) -> Result<Option<Response>, Failed> {
    let Some(c) = &shared.cluster else {
        return Ok(None);
    };
    if keys
        .iter()
        .any(|k| k.starts_with(crate::cluster::RESERVED_PREFIX))
    {
        return Err(Failed(
            "ERR keys starting with FF FF FF 'evendb-raft/' are the cluster's own".into(),
        ));
    }
    super::block_on(c.write(req()))
        .map(Some)
        .map_err(|e| Failed(e.reply()))
}

pub(super) fn get(shared: &Shared, args: &[Vec<u8>], out: &mut Out) -> Reply {
    let [key] = args else {
        return Err(wrong_args("get"));
    };
    out.maybe_bulk(shared.db().get(key)?.as_deref());
    Ok(After::Continue)
}

/// `SET key value [NX | XX] [GET] [KEEPTTL]`. Expiry options are refused:
/// the store keeps no TTLs.
pub(super) fn set(shared: &Shared, args: &[Vec<u8>], out: &mut Out) -> Reply {
    let [key, value, opts @ ..] = args else {
        return Err(wrong_args("set"));
    };
    let (mut nx, mut xx, mut get) = (false, false, false);
    for o in opts {
        match o.to_ascii_lowercase().as_slice() {
            b"nx" if !xx => nx = true,
            b"xx" if !nx => xx = true,
            b"get" => get = true,
            b"keepttl" => {}
            b"ex" | b"px" | b"exat" | b"pxat" => {
                return Err(Failed(
                    "ERR expiry (EX, PX, EXAT, PXAT) is not supported: evendb keeps no TTLs".into(),
                ))
            }
            _ => return Err(syntax()),
        }
    }
    let cond = match (nx, xx) {
        (true, _) => SetCond::Absent,
        (_, true) => SetCond::Present,
        _ => SetCond::Always,
    };
    let proposed = propose(shared, &[key], || Request::Set {
        key: key.clone(),
        value: value.clone(),
        cond,
        get,
    })?;
    if let Some(resp) = proposed {
        match resp {
            Response::Old(v) => out.maybe_bulk(v.as_deref()),
            Response::NotSet => out.nil(),
            _ => out.simple("OK"),
        }
        return Ok(After::Continue);
    }
    let _guard = shared.locks.keys([key]);
    let old = if nx || xx || get {
        shared.db().get(key)?
    } else {
        None
    };
    let write = !(nx && old.is_some() || xx && old.is_none());
    if write {
        shared.db().put(key, value)?;
    }
    if get {
        out.maybe_bulk(old.as_deref());
    } else if write {
        out.simple("OK");
    } else {
        out.nil();
    }
    Ok(After::Continue)
}

/// `DEL key...`: how many of the keys were there; all go in one batch.
pub(super) fn del(shared: &Shared, args: &[Vec<u8>], out: &mut Out) -> Reply {
    if args.is_empty() {
        return Err(wrong_args("del"));
    }
    let keys: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    if let Some(resp) = propose(shared, &keys, || Request::Del {
        keys: args.to_vec(),
    })? {
        out.int(if let Response::Count(n) = resp { n } else { 0 });
        return Ok(After::Continue);
    }
    let _guard = shared.locks.keys(args);
    let mut batch = evendb::WriteBatch::new();
    let mut seen = std::collections::HashSet::new();
    let mut n = 0;
    for key in args {
        if seen.insert(key.as_slice()) && shared.db().get(key)?.is_some() {
            batch.delete(key);
            n += 1;
        }
    }
    if n > 0 {
        shared.db().write(&batch)?;
    }
    out.int(n);
    Ok(After::Continue)
}

/// `EXISTS key...`: how many are there (a key named twice counts twice).
pub(super) fn exists(shared: &Shared, args: &[Vec<u8>], out: &mut Out) -> Reply {
    if args.is_empty() {
        return Err(wrong_args("exists"));
    }
    let mut n = 0;
    let view = View::of(shared, args.len());
    for key in args {
        n += i64::from(view.get(key)?.is_some());
    }
    out.int(n);
    Ok(After::Continue)
}

/// Where a multi-key read reads: the store for one key, a snapshot for
/// several, so that they are read at one point in time (never half of an
/// `MSET`).
enum View {
    Store(evendb::Db),
    Snapshot(evendb::Snapshot),
}

impl View {
    fn of(shared: &Shared, keys: usize) -> Self {
        if keys > 1 {
            View::Snapshot(shared.db().snapshot())
        } else {
            View::Store(shared.db())
        }
    }

    fn get(&self, key: &[u8]) -> evendb::Result<Option<Vec<u8>>> {
        match self {
            View::Store(db) => db.get(key),
            View::Snapshot(s) => s.get(key),
        }
    }
}

/// `MGET key...`, refused past the reply limit.
pub(super) fn mget(shared: &Shared, args: &[Vec<u8>], out: &mut Out) -> Reply {
    if args.is_empty() {
        return Err(wrong_args("mget"));
    }
    let mut reply = Out::new(out.proto);
    reply.array(args.len());
    let view = View::of(shared, args.len());
    for key in args {
        reply.maybe_bulk(view.get(key)?.as_deref());
        if reply.buf.len() > shared.settings.max_reply {
            return Err(Failed(format!(
                "ERR reply larger than {} bytes: ask for fewer keys at a time",
                shared.settings.max_reply
            )));
        }
    }
    out.buf.extend_from_slice(&reply.buf);
    Ok(After::Continue)
}

/// `MSET key value [key value ...]`: one atomic batch.
pub(super) fn mset(shared: &Shared, args: &[Vec<u8>], out: &mut Out) -> Reply {
    if args.is_empty() || !args.len().is_multiple_of(2) {
        return Err(wrong_args("mset"));
    }
    let keys: Vec<&[u8]> = args.iter().step_by(2).map(Vec::as_slice).collect();
    let pairs = || Request::MSet {
        pairs: args
            .chunks_exact(2)
            .map(|p| (p[0].clone(), p[1].clone()))
            .collect(),
    };
    if propose(shared, &keys, pairs)?.is_some() {
        out.simple("OK");
        return Ok(After::Continue);
    }
    let mut batch = evendb::WriteBatch::new();
    for pair in args.chunks_exact(2) {
        batch.put(&pair[0], &pair[1]);
    }
    let _guard = shared.locks.keys(args.iter().step_by(2));
    shared.db().write(&batch)?;
    out.simple("OK");
    Ok(After::Continue)
}
