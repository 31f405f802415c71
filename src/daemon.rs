//! Start-up and shutdown of the whole service (`mailproc run`).
//!
//! Order matters: the signal handlers come first (`signals`: they must be
//! in place before any other thread exists); then the HTTP port is bound,
//! so a taken port ends the process before anything else is started; then
//! the store, the webhook thread, the account workers and finally the HTTP
//! workers, after which systemd is told `READY=1` (`notify`). Shutdown
//! (SIGINT/SIGTERM) runs the other way round: tell systemd `STOPPING=1`,
//! stop taking requests, let each account finish the message in hand,
//! deliver queued webhooks for up to 5 s, and return so the process exits 0.
//! SIGHUP re-reads the configuration file and applies it (`live`); an
//! invalid file is logged and the running configuration kept.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::classify::Pool;
use crate::config::Loaded;
use crate::http::HttpServer;
use crate::live::{ChangeError, Deps, Live};
use crate::logging::LogRing;
use crate::metrics::Metrics;
use crate::service::{sessions, Ctx};
use crate::store::Store;
use crate::webhook::Webhooks;

/// How often old activity is pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

pub fn run(loaded: Loaded, logs: Arc<LogRing>) -> Result<(), String> {
    let config = &loaded.config;
    // First of all, before any other thread exists (see `signals::install`)
    // and before the port opens: a SIGHUP sent as soon as the port answers
    // must not find the default action (terminate) still in place, and a
    // SIGTERM during start-up becomes a graceful stop once started.
    // One slot: a second signal while shutting down changes nothing.
    let (shutdown_tx, shutdown_rx) = crossbeam_channel::bounded::<()>(1);
    let (reload_tx, reload_rx) = crossbeam_channel::bounded::<()>(1);
    crate::signals::install(shutdown_tx, reload_tx)?;
    let (listener, addr) = crate::http::bind(config)?;
    let store = Arc::new(Store::open_configured(&config.storage.path)?);
    let _one_service = crate::store::hold_for_service(&config.storage.path)?;
    // Said before any account starts (see `config::renamed_by_reading`).
    for w in crate::config::renamed_by_reading(config, &store.accounts_seen().unwrap_or_default()) {
        log::warn!("{w}");
    }
    let session_secret = session_secret(config, &store)?;
    let metrics = Arc::new(Metrics::new());

    let (webhooks, webhook_thread) =
        Webhooks::start(config, store.clone(), metrics.clone()).map_err(|e| e.to_string())?;

    let pool = Arc::new(Pool::start(config.classifier.concurrency).map_err(|e| e.to_string())?);
    let live = Live::start(
        loaded.clone(),
        Deps {
            store: store.clone(),
            metrics: metrics.clone(),
            webhooks: webhooks.clone(),
            pool: pool.clone(),
        },
    )?;

    for w in crate::config::warnings(config) {
        log::warn!("{w}");
    }
    if crate::auth::api_is_open(config) {
        crate::logging::warn_always(
            "mailproc::daemon",
            &format!(
                "NO API AUTHENTICATION: neither server.auth_token nor dashboard.api_keys is set, \
                 so anyone who reaches {addr} can read and change everything. Use this for \
                 development only."
            ),
        );
    }

    let workers = config.server.workers;
    let ctx = Arc::new(Ctx {
        live: live.clone(),
        store: store.clone(),
        metrics: metrics.clone(),
        logs,
        webhooks: webhooks.clone(),
        started: Instant::now(),
        session_secret,
        limiter: Default::default(),
        classifier: pool.clone(),
        setup: sessions::Setup::start(config.dashboard.enabled, &store, addr),
        drafts: Default::default(),
        training: Default::default(),
    });
    // The server asks `ctx` for every answer: `routes` implements its
    // `Site` (the one route table).
    let http = HttpServer::start(
        listener,
        ctx,
        metrics.clone(),
        workers,
        config.server.max_connections,
    )
    .map_err(|e| e.to_string())?;
    log::info!(
        "mailproc {} listening on http://{addr} with {} account(s)",
        crate::build_info::VERSION,
        config.accounts.len()
    );
    let status = format!(
        "listening on http://{addr}, {} account(s)",
        config.accounts.len()
    );
    if let Err(e) = crate::notify::ready(&status) {
        log::warn!("telling systemd we are ready failed: {e}");
    }

    let mut next_prune = Instant::now();
    loop {
        if Instant::now() >= next_prune {
            let config = live.config();
            let accounts = config.config.account_names();
            match store.prune(config.config.storage.activity_retention.0, &accounts) {
                Ok(0) => {}
                Ok(n) => log::info!("store: pruned {n} activity rows older than the retention"),
                Err(e) => log::error!("{e}"),
            }
            next_prune = Instant::now() + PRUNE_EVERY;
        }
        crossbeam_channel::select! {
            recv(shutdown_rx) -> _ => break,
            recv(reload_rx) -> _ => reload(&live),
            default(PRUNE_EVERY) => {}
        }
    }

    log::info!("shutting down");
    if let Err(e) = crate::notify::stopping() {
        log::warn!("telling systemd we are stopping failed: {e}");
    }
    http.stop();
    live.shutdown();
    // Every account has ended: an answer still coming is for nobody.
    let left = pool.stop(Duration::from_secs(2));
    if left > 0 {
        log::info!("{left} model call(s) still in flight are left unanswered");
    }
    webhooks.shutdown();
    let _ = webhook_thread.join();
    log::info!("stopped");
    Ok(())
}

/// SIGHUP: the file as it is now, through the same path as `PUT /api/config`.
fn reload(live: &Live) {
    log::info!("SIGHUP: reloading {}", live.config().path.display());
    if let Err(e) = live.reload() {
        match e {
            ChangeError::Invalid(problems) => {
                for p in &problems {
                    log::error!("reload: {p}");
                }
                // A variable added to the EnvironmentFile with its
                // reference: the reload read the file, not the environment
                // (an audit followed the README's "add the reference and
                // reload" and got only "not set").
                if problems.iter().any(|p| p.contains("is not set")) {
                    log::error!(
                        "reload: a reload reads the configuration file, not the environment: the \
                         service keeps the variables it started with, so one added to or changed \
                         in its EnvironmentFile takes a restart (systemctl restart mailproc)"
                    );
                }
                log::error!(
                    "reload: the configuration file has {} problem(s); the running configuration is kept",
                    problems.len()
                );
            }
            e @ (ChangeError::Write(_) | ChangeError::Stale(_) | ChangeError::Overtaken(_)) => {
                log::error!("reload: {e}")
            }
        }
    }
}

/// The key sessions are HMACed with: from the config, else stored on first run.
fn session_secret(config: &crate::config::Config, store: &Store) -> Result<Vec<u8>, String> {
    if let Some(s) = &config.dashboard.session_secret {
        return Ok(s.as_bytes().to_vec());
    }
    if let Some(s) = store.setting("session_secret").map_err(|e| e.to_string())? {
        return Ok(s.into_bytes());
    }
    let s = crate::auth::new_token();
    store
        .set_setting("session_secret", &s)
        .map_err(|e| e.to_string())?;
    Ok(s.into_bytes())
}
