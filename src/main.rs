//! The `mailproc` command: parses the command line, loads the configuration
//! and hands over to `daemon::run`. Nothing else happens here.
#![forbid(unsafe_code)]

use std::ffi::{OsStr, OsString};
use std::io::IsTerminal;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::process::ExitCode;

use mailproc::{auth, config, daemon, logging, oauth, store::Store};

const USAGE: &str = "\
usage: mailproc [--config PATH] [COMMAND]

commands:
  run                 run the service (the default)
  check-config        validate the configuration and list every problem
  set-password USER   create USER or reset its password (read from the terminal or stdin)
  oauth ACCOUNT       get the first OAuth2 refresh token of ACCOUNT (imap.auth: oauth2)
                      with the device authorization grant; prints it on stdout
  train ACCOUNT       fit ACCOUNT's learned classifier from the mail already in its
                      watched folders, folders.allowed and its junk folder (read-only);
                      a running service picks it up at the account's next pass

options:
  -c, --config PATH   configuration file (default ./config.yaml); also --config=PATH
  -V, --version       print the version
  -h, --help          print this help

environment:
  MAILPROC_LOG        log level: error, warn, info, debug, trace; overrides the
                      configuration's log_level (default info)
  NOTIFY_SOCKET       set by systemd (Type=notify): READY=1 once serving,
                      STOPPING=1 when shutting down
  JOURNAL_STREAM      set by systemd: log lines get <N> priorities, no timestamps
  ${NAME}             any variable the configuration refers to

signals:
  SIGTERM, SIGINT     stop gracefully (finish the batch in hand), exit 0
  SIGHUP              read the configuration file again and apply it when valid
                      (as PUT /api/config); an invalid file is logged and the
                      running configuration stays

exit status: 0 success, 1 error (configuration, start-up, command), 2 usage
";

enum Cmd {
    Run,
    CheckConfig,
    SetPassword(String),
    OAuth(String),
    Train(String),
}

fn parse_args() -> Result<(PathBuf, Cmd), String> {
    parse(std::env::args_os().skip(1))
}

/// Two malloc arenas, as `mailproc.service` sets (`MALLOC_ARENA_MAX=2`),
/// however the service is started: glibc gives each thread that
/// allocates an arena of its own and keeps what each freed, so started
/// from a shell, Docker or another supervisor the service grew 1.5 to
/// 2 MB a minute under steady mail and gave nothing back (the long-run
/// audit: 35 to 78 MB in 25 minutes; nearly flat with the variable).
/// glibc reads the variable when the process starts, so `run` without it
/// executes itself again with it (the same process id, before any thread
/// or socket of its own); one set outside wins.
fn with_two_malloc_arenas() {
    use std::os::unix::process::CommandExt;
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return;
    }
    let mut args = std::env::args_os();
    let mut again = std::process::Command::new("/proc/self/exe");
    if let Some(name) = args.next() {
        again.arg0(name);
    }
    let e = again.args(args).env("MALLOC_ARENA_MAX", "2").exec();
    err(&format!(
        "mailproc: could not start again with MALLOC_ARENA_MAX=2 ({e}); going on without it\n"
    ));
}

/// Writes `text` to standard error, whatever becomes of it: there is no
/// one left to tell when that fails. `eprintln!` panicked with status 101
/// when standard error was a closed pipe (an audit: `mailproc train demo
/// 2>&1 | head -2` died in the middle of its reading, storing nothing).
fn err(text: &str) {
    use std::io::Write;
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// [`err`] with a line's end.
macro_rules! errln {
    ($($arg:tt)*) => {
        err(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// Writes `text` to standard output. A write that fails (a closed pipe,
/// a full disk) ends the command with status 1, said on standard error:
/// `println!` panicked with a backtrace and status 101 (an audit:
/// `mailproc --help | true`, `check-config > /dev/full`).
fn out(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        errln!("mailproc: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}

/// [`out`] with a line's end, formatted as `println!` is.
macro_rules! outln {
    ($($arg:tt)*) => {
        out(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// What the command line asks for, or a usage error (exit 2). `--help` and
/// `--version` anywhere print and exit 0, also after a command: the name a
/// command takes is never an option (`--` before it lets one begin with
/// `-`).
fn parse(args: impl Iterator<Item = OsString>) -> Result<(PathBuf, Cmd), String> {
    let mut config = PathBuf::from("config.yaml");
    let mut cmd = None;
    let mut args = args.peekable();
    // An option where the path belongs (`-c --help`) is a usage error; a
    // path that begins with `-` goes as `--config=PATH`. A path may hold
    // any byte but `/` and NUL (`std::env::args` panicked on one that is
    // not UTF-8, status 101: an audit).
    let path = |p: Option<OsString>| match p {
        Some(p) if !p.is_empty() && !p.as_bytes().starts_with(b"-") => Ok(PathBuf::from(p)),
        _ => Err("--config needs a path (one that begins with - as --config=PATH)".to_string()),
    };
    while let Some(raw) = args.next() {
        let Some(a) = raw.to_str() else {
            if let Some(p) = raw.as_bytes().strip_prefix(b"--config=") {
                config = PathBuf::from(OsStr::from_bytes(p));
                continue;
            }
            return Err(format!("unexpected argument {raw:?} (not UTF-8)"));
        };
        match a {
            "--config" | "-c" => config = path(args.next())?,
            s if s.starts_with("--config=") => match &s["--config=".len()..] {
                "" => return Err("--config needs a path".into()),
                p => config = p.into(),
            },
            "--version" | "-V" => {
                outln!("mailproc {}", mailproc::VERSION);
                std::process::exit(0);
            }
            "--help" | "-h" | "help" => {
                out(USAGE);
                std::process::exit(0);
            }
            "run" if cmd.is_none() => cmd = Some(Cmd::Run),
            "check-config" if cmd.is_none() => cmd = Some(Cmd::CheckConfig),
            "set-password" if cmd.is_none() => {
                cmd = Some(Cmd::SetPassword(operand(
                    &mut args,
                    "set-password",
                    "a user",
                )?));
            }
            "oauth" if cmd.is_none() => {
                cmd = Some(Cmd::OAuth(operand(&mut args, "oauth", "an account")?));
            }
            "train" if cmd.is_none() => {
                cmd = Some(Cmd::Train(operand(&mut args, "train", "an account")?));
            }
            other if cmd.is_none() && !other.starts_with('-') => {
                return Err(format!(
                    "unknown command {other:?} (commands: run, check-config, set-password, \
                     oauth, train)"
                ))
            }
            other => return Err(format!("unexpected argument {other:?}")),
        }
    }
    Ok((config, cmd.unwrap_or(Cmd::Run)))
}

/// The name `command` takes. `--help` there prints the usage; another
/// option is an error rather than a name (`set-password --help` once
/// created the user `--help`); after `--`, the next argument is the name
/// whatever it reads.
fn operand(
    args: &mut std::iter::Peekable<impl Iterator<Item = OsString>>,
    command: &str,
    what: &str,
) -> Result<String, String> {
    let needs = || format!("{command} needs {what} name");
    let utf8 = |a: OsString| {
        a.into_string()
            .map_err(|a| format!("{command}: {what} name must be UTF-8, got {a:?}"))
    };
    let a = utf8(args.next().ok_or_else(needs)?)?;
    match a.as_str() {
        "--help" | "-h" => {
            out(USAGE);
            std::process::exit(0);
        }
        "--version" | "-V" => {
            outln!("mailproc {}", mailproc::VERSION);
            std::process::exit(0);
        }
        "--" => match args.next().map(utf8).transpose()? {
            Some(name) if !name.is_empty() => Ok(name),
            _ => Err(needs()),
        },
        "" => Err(needs()),
        s if s.starts_with('-') => Err(format!(
            "{command}: unexpected option {s:?} where {what} name belongs \
             (write `{command} -- {s}` for a name that begins with -)"
        )),
        _ => Ok(a),
    }
}

fn main() -> ExitCode {
    // Everything this process creates (the database and its -wal and -shm,
    // the configuration it rewrites, its .bak) is its user's alone, also
    // when it is not started by systemd (whose unit sets UMask=0077).
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    // The service's own reader of configuration text from outside.
    if std::env::args_os().nth(1).as_deref() == Some(OsStr::new(config::untrusted::CHILD_COMMAND)) {
        return config::untrusted::child_main();
    }
    let (path, cmd) = match parse_args() {
        Ok(x) => x,
        Err(e) => {
            logging::to_stderr(logging::ERROR, &format!("mailproc: {e}"));
            err(&format!("\n{USAGE}"));
            return ExitCode::from(2);
        }
    };
    if matches!(cmd, Cmd::Run) {
        with_two_malloc_arenas();
        // A SIGHUP before `signals::install` would end the process (its
        // default action): an audit's came in the first milliseconds,
        // while the file was read. Blocked from here, it waits and is
        // taken as a reload once the service runs.
        let mut hangup = nix::sys::signal::SigSet::empty();
        hangup.add(nix::sys::signal::Signal::SIGHUP);
        let _ = hangup.thread_block();
    }
    let loaded = match &cmd {
        // The helper exists to get the refresh token the file still lacks.
        Cmd::OAuth(_) => config::load_for_oauth_helper(&path),
        _ => config::load(&path),
    };
    let loaded = match loaded {
        Ok(l) => l,
        Err(mut e) => {
            // check-config lists every problem at once, the storage path's
            // too (the first-hour audit found it told only once the rest
            // was mended).
            if matches!(cmd, Cmd::CheckConfig)
                && !e.problems.iter().any(|p| p.starts_with("storage.path"))
            {
                if let Some(Err(why)) =
                    config::storage_path_of(&path).map(|p| mailproc::store::check_path(&p))
                {
                    e.problems.push(format!("storage.path: {why}"));
                }
            }
            let mut text = format!("mailproc: invalid configuration {}:", path.display());
            for p in &e.problems {
                text.push_str(&format!("\n  {p}"));
            }
            logging::to_stderr(logging::ERROR, &text);
            return ExitCode::FAILURE;
        }
    };
    match cmd {
        Cmd::CheckConfig => {
            if let Err(e) = mailproc::store::check_path(&loaded.config.storage.path) {
                logging::to_stderr(
                    logging::ERROR,
                    &format!(
                        "mailproc: invalid configuration {}:\n  storage.path: {e}",
                        path.display()
                    ),
                );
                return ExitCode::FAILURE;
            }
            let empty = mailproc::store::empty_file_warning(&loaded.config.storage.path);
            let seen = mailproc::store::accounts_seen_at(&loaded.config.storage.path);
            let renamed = config::renamed_by_reading(&loaded.config, &seen);
            for w in (config::warnings(&loaded.config).into_iter())
                .chain(empty)
                .chain(renamed)
            {
                logging::to_stderr(logging::WARNING, &format!("warning: {w}"));
            }
            outln!(
                "{}: ok ({} account(s), {} provider(s), {} API key(s))",
                path.display(),
                loaded.config.accounts.len(),
                loaded.config.classifier.providers.len(),
                loaded.config.dashboard.api_keys.len()
            );
            ExitCode::SUCCESS
        }
        Cmd::SetPassword(user) => match set_password(&loaded.config, &user) {
            Ok(()) => {
                outln!("password set for {user}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                errln!("mailproc: {e}");
                ExitCode::FAILURE
            }
        },
        Cmd::OAuth(name) => {
            let Some(account) = loaded.config.accounts.iter().find(|a| a.name == name) else {
                errln!("mailproc: no account named {name:?} in {}", path.display());
                return ExitCode::FAILURE;
            };
            let var = config::refresh_token_variable(&loaded.raw, &name);
            match oauth::device::helper(account, var.as_deref(), &mut std::io::stderr()) {
                Ok(token) => {
                    outln!("{token}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    errln!("mailproc: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Train(name) => {
            let Some(account) = loaded.config.accounts.iter().find(|a| a.name == name) else {
                errln!("mailproc: no account named {name:?} in {}", path.display());
                return ExitCode::FAILURE;
            };
            match train(&loaded.config, account, &path) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    errln!("mailproc: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Run => {
            let logs = logging::init(loaded.config.log_level.filter());
            // Tests send a SIGHUP here, before the service's handlers.
            mailproc::failpoint::hit("before-signals");
            match daemon::run(loaded, logs) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    log::error!("{e}");
                    // The log line is the journal's error already; a
                    // terminal gets the reason once more, plainly, last.
                    if !logging::stderr_is_journal() {
                        errln!("mailproc: {e}");
                    }
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// A migration a shell command made, said on standard error (it has no
/// log to say it in).
fn say_migration() {
    if let Some(said) = mailproc::store::migration_said() {
        errln!("mailproc: {said}");
    }
}

fn set_password(config: &config::Config, user: &str) -> Result<(), String> {
    // A name that is blank or begins or ends with a space cannot be told
    // apart on the login page (an audit made the user " ").
    if user.trim() != user
        || user.is_empty()
        || user.len() > 64
        || user.chars().any(|c| c.is_control() || c == ':')
    {
        return Err(format!(
            "invalid user name {user:?}: 1 to 64 bytes, no space at either end, no control \
             character and no `:`"
        ));
    }
    let password = if std::io::stdin().is_terminal() {
        restore_terminal_when_interrupted();
        let read = |prompt: &str| {
            rpassword::prompt_password(prompt).map_err(|e| {
                if e.kind() == std::io::ErrorKind::Interrupted {
                    interrupted();
                }
                e.to_string()
            })
        };
        let p = read(&format!("new password for {user}: "))?;
        let again = read("again: ")?;
        if p != again {
            return Err("the passwords differ".into());
        }
        p
    } else {
        use std::io::{BufRead, Read};
        // One line of at most 4 KiB (Argon2 takes any length; a stream
        // without a line's end is not read into memory whole).
        let none = "no password on standard input (write it there as one line, or run this in \
                    a terminal to be asked for it)";
        const MAX: usize = 4096;
        let mut line = Vec::new();
        // Room for the password and its CRLF: more is too long.
        let read = std::io::stdin()
            .lock()
            .take(MAX as u64 + 2)
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("{none}: {e}"))?;
        if read == 0 {
            return Err(none.into());
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        // Refused, not cut: a password cut short would not be the one
        // typed at the login (a regression audit).
        if line.len() > MAX {
            return Err(format!("the password is longer than {MAX} bytes"));
        }
        String::from_utf8(line).map_err(|_| "the password is not UTF-8".to_string())?
    };
    if password.chars().count() < 8 {
        return Err("the password must be at least 8 characters".into());
    }
    let store = Store::open_configured(&config.storage.path)?;
    say_migration();
    let hash = auth::hash_password(&password)?;
    store.set_password(user, &hash).map_err(|e| e.to_string())
}

/// The terminal as it was before the password prompt.
static TERMINAL: parking_lot::Mutex<Option<nix::sys::termios::Termios>> =
    parking_lot::Mutex::new(None);

/// Puts the terminal back as it was (echo on) when the command is
/// interrupted at the password prompt, which turns echo off: Ctrl-C there
/// left a shell without readline (dash) typing blind (the CLI audit).
fn restore_terminal_when_interrupted() {
    let Ok(before) = nix::sys::termios::tcgetattr(std::io::stdin()) else {
        return;
    };
    *TERMINAL.lock() = Some(before);
    let _ = ctrlc::set_handler(interrupted);
}

/// The end of a command interrupted at the password prompt: the terminal
/// as it was, status 130 (128 + SIGINT), as a shell says of it. Reached
/// from the signal's handler, or from the prompt's read that the signal
/// cut short (which won the race half the time and ended with 1: the
/// regression audit).
fn interrupted() {
    // One of the two ends the process; `exit` from both at once is not
    // safe.
    static ENDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if ENDING.swap(true, std::sync::atomic::Ordering::SeqCst) {
        loop {
            std::thread::park();
        }
    }
    if let Some(before) = TERMINAL.lock().take() {
        let _ = nix::sys::termios::tcsetattr(
            std::io::stdin(),
            nix::sys::termios::SetArg::TCSANOW,
            &before,
        );
    }
    err("\n");
    std::process::exit(130);
}

fn train(
    config: &config::Config,
    account: &config::AccountConfig,
    path: &std::path::Path,
) -> Result<(), String> {
    let store = std::sync::Arc::new(Store::open_configured(&config.storage.path)?);
    say_migration();
    let mut last = String::new();
    let report = mailproc::service::train::train_account(
        account,
        &store,
        &mut |folder, done, total| {
            if folder != last || done == total {
                errln!("{folder}: {done}/{total}");
                last = folder.to_string();
            }
        },
        // The account still goes by its name in the file (a save from the
        // dashboard or the API may have renamed or removed it while this
        // read: stored under the old name, the classifier reached no
        // account; the regression audit, stop 59). A file that does not
        // read as a configuration now, or a stream, cannot say otherwise.
        &|| match config::load_again(path) {
            Ok(now) => now.config.accounts.iter().any(|a| a.name == account.name),
            Err(_) => true,
        },
    )?;
    for (folder, n) in &report.folders {
        outln!("{folder}: {n} message(s)");
    }
    for (folder, why) in &report.skipped {
        outln!("{folder}: skipped: {why}");
    }
    if let Some(few) = report.too_few_said() {
        errln!("note: {few}");
    }
    outln!(
        "trained {} on {} message(s) in {} ms",
        account.name,
        report.examples,
        report.duration_ms
    );
    if let Some(n) = report.replaced.filter(|n| *n > report.examples as u64) {
        errln!(
            "note: the classifier this replaced was trained on {n} message(s); the folders \
             hold fewer now"
        );
    }
    // Kept all the same, for when it is switched on (an audit found the
    // silence misleading).
    if !account.learned.enabled {
        errln!(
            "note: learned.enabled is false for {}: the service decides nothing by this \
             classifier until it is set to true",
            account.name
        );
    }
    Ok(())
}
