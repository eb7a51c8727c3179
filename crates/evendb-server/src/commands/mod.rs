//! Commands: each reads its arguments, calls the store and writes its
//! reply. They run on a blocking thread (see `server`), since the store's
//! calls may wait for the disk.

mod data;
mod info;
mod range;

use crate::resp::{Command, Out, Proto};
use crate::state::Shared;
use subtle::ConstantTimeEq;

/// A connection's state that commands change.
#[derive(Debug)]
pub struct Session {
    pub id: u64,
    pub proto: Proto,
    pub authed: bool,
    pub name: Option<Vec<u8>>,
    /// `READONLY`: in a cluster, reads are served from this node's store
    /// as it is, without asking the leader (possibly stale).
    pub stale_reads: bool,
}

impl Session {
    /// A new connection's session: authenticated when no password is set.
    pub fn new(shared: &Shared) -> Self {
        Session {
            id: shared.client_id(),
            proto: Proto::Resp2,
            authed: shared.settings.password.is_none(),
            name: None,
            stale_reads: false,
        }
    }
}

/// What the connection does after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    Continue,
    /// `QUIT`: close after the reply.
    Close,
    /// `SHUTDOWN`: close, and stop the server.
    Shutdown,
}

/// A command's failure, answered as an error reply.
pub(crate) struct Failed(pub String);

impl From<evendb::Error> for Failed {
    fn from(e: evendb::Error) -> Self {
        Failed(format!("ERR {e}"))
    }
}

pub(crate) type Reply = Result<After, Failed>;

pub(crate) fn wrong_args(name: &str) -> Failed {
    Failed(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

pub(crate) fn syntax() -> Failed {
    Failed("ERR syntax error".into())
}

/// An argument as a non-negative integer.
pub(crate) fn count(arg: &[u8]) -> Result<u64, Failed> {
    std::str::from_utf8(arg)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| Failed("ERR value is not an integer or out of range".into()))
}

/// True for `SET key value` without options.
pub fn plain_set(cmd: &[Vec<u8>]) -> bool {
    cmd.len() == 3 && cmd[0].eq_ignore_ascii_case(b"set")
}

/// Runs consecutive plain `SET`s (see [`plain_set`]) of one pipeline as
/// one `WriteBatch`: in `sync` durability one durable commit for all of
/// them instead of one each. Each is acknowledged only once all are
/// durable (replies go out after the batch anyway). Only where
/// [`Shared::groups_sets`] and the session is authenticated. Returns
/// false, having done nothing, if a key or value is past the engine's
/// limits (each then gets its own error).
pub fn set_group<'a>(
    shared: &Shared,
    sets: impl Iterator<Item = &'a Command> + Clone,
    out: &mut Out,
) -> bool {
    let fits =
        |c: &Command| c[1].len() <= evendb::MAX_KEY_SIZE && c[2].len() <= evendb::MAX_VALUE_SIZE;
    if !sets.clone().all(fits) {
        return false;
    }
    let started = std::time::Instant::now();
    let mut batch = evendb::WriteBatch::new();
    let mut n = 0;
    for c in sets.clone() {
        batch.put(&c[1], &c[2]);
        n += 1;
    }
    if batch.size_in_bytes() > evendb::MAX_BATCH_SIZE {
        return false;
    }
    let result = {
        let _guard = shared.locks.keys(sets.map(|c| c[1].as_slice()));
        shared.db().write(&batch)
    };
    let micros = started.elapsed().as_micros() as u64 / n;
    for _ in 0..n {
        match &result {
            Ok(()) => out.simple("OK"),
            Err(e) => {
                shared
                    .metrics
                    .error_replies
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                out.error(&format!("ERR {e}"));
            }
        }
        shared.metrics.command("set", micros);
    }
    true
}

/// Runs `cmd`, writing its reply into `out`.
pub fn execute(shared: &Shared, session: &mut Session, cmd: &[Vec<u8>], out: &mut Out) -> After {
    let Some(name) = cmd.first() else {
        return After::Continue;
    };
    let name = String::from_utf8_lossy(name).to_ascii_lowercase();
    let started = std::time::Instant::now();
    let reply = if !session.authed && !matches!(name.as_str(), "auth" | "hello" | "quit") {
        Err(Failed("NOAUTH Authentication required.".into()))
    } else {
        dispatch(shared, session, &name, cmd, out)
    };
    let after = match reply {
        Ok(after) => after,
        Err(Failed(text)) => {
            shared
                .metrics
                .error_replies
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            out.error(&text);
            After::Continue
        }
    };
    shared
        .metrics
        .command(&name, started.elapsed().as_micros() as u64);
    after
}

/// Runs `f` to completion on the runtime (commands of a cluster node run
/// on the blocking pool, where this may wait).
pub(crate) fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Handle::current().block_on(f)
}

/// In a cluster, before a read: Raft's read index, unless the session
/// asked for `READONLY` reads.
fn read_barrier(shared: &Shared, session: &Session) -> Result<(), Failed> {
    match &shared.cluster {
        Some(c) if !session.stale_reads => block_on(c.linearize()).map_err(|e| Failed(e.reply())),
        _ => Ok(()),
    }
}

fn dispatch(
    shared: &Shared,
    session: &mut Session,
    name: &str,
    cmd: &[Vec<u8>],
    out: &mut Out,
) -> Reply {
    let args = &cmd[1..];
    if matches!(name, "get" | "mget" | "exists" | "range" | "prefix") {
        read_barrier(shared, session)?;
    }
    match name {
        "get" => data::get(shared, args, out),
        "set" => data::set(shared, args, out),
        "del" => data::del(shared, args, out),
        "exists" => data::exists(shared, args, out),
        "mget" => data::mget(shared, args, out),
        "mset" => data::mset(shared, args, out),
        "range" => range::range(shared, args, out),
        "prefix" => range::prefix(shared, args, out),
        "delrange" => range::delrange(shared, args, out),
        "delprefix" => range::delprefix(shared, args, out),
        "flush" => {
            if !args.is_empty() {
                return Err(wrong_args("flush"));
            }
            shared.db().flush()?;
            out.simple("OK");
            Ok(After::Continue)
        }
        "info" => info::info(shared, args, out),
        "cluster" => cluster(shared, args, out),
        "readonly" | "readwrite" => {
            if shared.cluster.is_none() {
                return Err(Failed(
                    "ERR This instance has cluster support disabled".into(),
                ));
            }
            session.stale_reads = name == "readonly";
            out.simple("OK");
            Ok(After::Continue)
        }
        "ping" => match args {
            [] => {
                out.simple("PONG");
                Ok(After::Continue)
            }
            [msg] => {
                out.bulk(msg);
                Ok(After::Continue)
            }
            _ => Err(wrong_args("ping")),
        },
        "echo" => match args {
            [msg] => {
                out.bulk(msg);
                Ok(After::Continue)
            }
            _ => Err(wrong_args("echo")),
        },
        "auth" => auth(shared, session, args, out),
        "hello" => hello(shared, session, args, out),
        "quit" => {
            out.simple("OK");
            Ok(After::Close)
        }
        "shutdown" => match args {
            [] => Ok(After::Shutdown),
            [mode]
                if ["nosave", "save", "now", "force"]
                    .iter()
                    .any(|m| mode.eq_ignore_ascii_case(m.as_bytes())) =>
            {
                Ok(After::Shutdown)
            }
            _ => Err(syntax()),
        },
        "client" => client(session, args, out),
        "select" => match args {
            [db] if db.as_slice() == b"0" => {
                out.simple("OK");
                Ok(After::Continue)
            }
            [_] => Err(Failed("ERR DB index is out of range".into())),
            _ => Err(wrong_args("select")),
        },
        "config" => config(shared, args, out),
        "command" => {
            match args.first().map(|a| a.to_ascii_lowercase()).as_deref() {
                Some(b"count") => out.int(0),
                Some(b"docs") => out.map(0),
                _ => out.array(0),
            }
            Ok(After::Continue)
        }
        "dbsize" => Err(Failed(
            "ERR DBSIZE is not supported: evendb keeps no key count (count with RANGE - + LIMIT n)"
                .into(),
        )),
        "flushall" | "flushdb" => Err(Failed(format!(
            "ERR {} is not supported: drop keys with DELRANGE - + (FLUSH makes writes durable)",
            name.to_ascii_uppercase()
        ))),
        _ => {
            let shown: String = String::from_utf8_lossy(&cmd[0]).chars().take(128).collect();
            Err(Failed(format!(
                "ERR unknown command '{shown}', with args beginning with: {}",
                args.iter()
                    .take(3)
                    .map(|a| format!(
                        "'{}' ",
                        String::from_utf8_lossy(a)
                            .chars()
                            .take(64)
                            .collect::<String>()
                    ))
                    .collect::<String>()
            )))
        }
    }
}

/// `CLUSTER INFO | ADDNODE id raft_addr redis_addr | REMOVENODE id`.
fn cluster(shared: &Shared, args: &[Vec<u8>], out: &mut Out) -> Reply {
    let Some(c) = &shared.cluster else {
        return Err(Failed(
            "ERR This instance has cluster support disabled".into(),
        ));
    };
    let sub = args
        .first()
        .map(|a| a.to_ascii_lowercase())
        .unwrap_or_default();
    let text = |a: &[u8]| String::from_utf8_lossy(a).to_string();
    let fail = |e: crate::cluster::node::ClusterError| Failed(e.reply());
    match (sub.as_slice(), args.len()) {
        (b"info", 1) => {
            let lines: String = c
                .status()
                .into_iter()
                .map(|(k, v)| format!("{k}:{v}\r\n"))
                .collect();
            out.text(&lines);
        }
        (b"addnode", 4) => {
            let id = count(&args[1])?;
            let node = crate::cluster::ClusterNode {
                raft: text(&args[2]),
                redis: text(&args[3]),
            };
            block_on(c.add_node(id, node)).map_err(fail)?;
            out.simple("OK");
        }
        (b"removenode", 2) => {
            block_on(c.remove_node(count(&args[1])?)).map_err(fail)?;
            out.simple("OK");
        }
        _ => return Err(Failed(
            "ERR CLUSTER INFO, CLUSTER ADDNODE id raft_addr redis_addr or CLUSTER REMOVENODE id"
                .into(),
        )),
    }
    Ok(After::Continue)
}

/// `CONFIG GET name...`: the few settings clients and tools read at
/// connect (redis-benchmark asks for `save` and `appendonly`), answered
/// in Redis's terms; names are matched exactly (no glob patterns).
fn config(shared: &Shared, args: &[Vec<u8>], out: &mut Out) -> Reply {
    let get = args.first().is_some_and(|a| a.eq_ignore_ascii_case(b"get"));
    if !get || args.len() < 2 {
        return Err(Failed(
            "ERR CONFIG: only CONFIG GET is served; settings are flags of evendb-server".into(),
        ));
    }
    let budget = shared.db().stats().memory_budget.to_string();
    let known: Vec<(&[u8], String)> = args[1..]
        .iter()
        .filter_map(|name| {
            let value = match name.to_ascii_lowercase().as_slice() {
                // evendb has its own logs and checkpoints, no RDB or AOF.
                b"save" => String::new(),
                b"appendonly" => "no".into(),
                b"databases" => "1".into(),
                b"maxmemory" => budget.clone(),
                b"maxclients" => shared.settings.max_clients.to_string(),
                _ => return None,
            };
            Some((name.as_slice(), value))
        })
        .collect();
    out.map(known.len());
    for (name, value) in known {
        out.bulk(name);
        out.bulk(value.as_bytes());
    }
    Ok(After::Continue)
}

/// Compares `given` with the password in constant time (for equal
/// lengths; the length itself is not secret enough to hide).
fn password_ok(shared: &Shared, given: &[u8]) -> bool {
    shared
        .settings
        .password
        .as_deref()
        .is_some_and(|p| bool::from(p.ct_eq(given)))
}

fn check_auth(shared: &Shared, session: &mut Session, user: Option<&[u8]>, pass: &[u8]) -> Reply {
    if shared.settings.password.is_none() {
        return Err(Failed(
            "ERR AUTH <password> called without any password configured for the default user. \
             Are you sure your configuration is correct?"
                .into(),
        ));
    }
    let user_ok = user.is_none_or(|u| u == b"default");
    if user_ok && password_ok(shared, pass) {
        session.authed = true;
        Ok(After::Continue)
    } else {
        Err(Failed(
            "WRONGPASS invalid username-password pair or user is disabled.".into(),
        ))
    }
}

fn auth(shared: &Shared, session: &mut Session, args: &[Vec<u8>], out: &mut Out) -> Reply {
    match args {
        [pass] => check_auth(shared, session, None, pass)?,
        [user, pass] => check_auth(shared, session, Some(user), pass)?,
        _ => return Err(wrong_args("auth")),
    };
    out.simple("OK");
    Ok(After::Continue)
}

/// `HELLO [protover [AUTH user pass] [SETNAME name]]`.
fn hello(shared: &Shared, session: &mut Session, args: &[Vec<u8>], out: &mut Out) -> Reply {
    let mut proto = session.proto;
    if let Some(v) = args.first() {
        proto = match v.as_slice() {
            b"2" => Proto::Resp2,
            b"3" => Proto::Resp3,
            _ => return Err(Failed("NOPROTO unsupported protocol version".into())),
        };
    }
    let mut rest = args.get(1..).unwrap_or_default();
    let mut name = None;
    while let Some(opt) = rest.first() {
        if opt.eq_ignore_ascii_case(b"auth") && rest.len() >= 3 {
            check_auth(shared, session, Some(&rest[1]), &rest[2])?;
            rest = &rest[3..];
        } else if opt.eq_ignore_ascii_case(b"setname") && rest.len() >= 2 {
            name = Some(rest[1].clone());
            rest = &rest[2..];
        } else {
            return Err(syntax());
        }
    }
    if !session.authed {
        return Err(Failed(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the \
             HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and \
             select the RESP protocol version at the same time"
                .into(),
        ));
    }
    if name.is_some() {
        session.name = name;
    }
    session.proto = proto;
    out.proto = proto;
    out.map(7);
    out.bulk(b"server");
    out.bulk(b"evendb");
    out.bulk(b"version");
    out.bulk(env!("CARGO_PKG_VERSION").as_bytes());
    out.bulk(b"proto");
    out.int(if proto == Proto::Resp3 { 3 } else { 2 });
    out.bulk(b"id");
    out.int(session.id as i64);
    out.bulk(b"mode");
    out.bulk(b"standalone");
    out.bulk(b"role");
    out.bulk(b"master");
    out.bulk(b"modules");
    out.array(0);
    Ok(After::Continue)
}

fn client(session: &mut Session, args: &[Vec<u8>], out: &mut Out) -> Reply {
    let sub = args
        .first()
        .map(|a| a.to_ascii_lowercase())
        .unwrap_or_default();
    match (sub.as_slice(), args.len()) {
        (b"setname", 2) => {
            session.name = Some(args[1].clone()).filter(|n| !n.is_empty());
            out.simple("OK");
        }
        (b"getname", 1) => out.maybe_bulk(session.name.as_deref()),
        (b"id", 1) => out.int(session.id as i64),
        // Client libraries announce themselves at connect (redis-py).
        (b"setinfo", 3) => out.simple("OK"),
        _ => {
            return Err(Failed(format!(
                "ERR unknown subcommand '{}'. Try CLIENT SETNAME, GETNAME, ID or SETINFO.",
                String::from_utf8_lossy(&sub)
            )))
        }
    }
    Ok(After::Continue)
}
