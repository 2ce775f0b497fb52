//! A throwaway PostgreSQL server for tests (feature `testing`): started from the Debian
//! binaries in a temporary directory on a loopback port, as an unprivileged user when the
//! tests run as root (PostgreSQL refuses to run as root), and stopped when dropped. A
//! watchdog process stops it too if the test process dies without dropping it (a `kill -9`,
//! a test runner's timeout): no server outlives the test run.
//!
//! A test that needs PostgreSQL starts one; none is skipped because a server is absent:
//! without the binaries [`PgServer::start`] fails, naming the script that installs them
//! (`driver/setup-postgres`).

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// The user a server runs as when the tests run as root: `nobody`.
const UNPRIVILEGED: (u32, u32) = (65534, 65534);

/// A running throwaway PostgreSQL server.
#[derive(Debug)]
pub struct PgServer {
    /// The temporary directory (its data directory and socket inside), removed on drop.
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    watchdog: Option<Child>,
    databases: AtomicU32,
}

/// Where the PostgreSQL binaries are: `ABR_PG_BINDIR`, else the newest
/// `/usr/lib/postgresql/<version>/bin`, else `initdb` on the `PATH`.
///
/// # Errors
/// A message naming the install script when there are none.
pub fn pg_bindir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("ABR_PG_BINDIR") {
        return Ok(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Ok(bin);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .find(|dir| dir.join("initdb").exists() && dir.join("pg_ctl").exists())
        .ok_or_else(|| {
            "no PostgreSQL server binaries (initdb, pg_ctl): run driver/setup-postgres \
             (Debian's postgresql package), or set ABR_PG_BINDIR"
                .to_owned()
        })
}

fn is_root() -> bool {
    // `/proc/self` belongs to the process's effective user.
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

/// A command for a PostgreSQL binary, as the unprivileged user when root.
fn pg_command(bin: &Path, name: &str) -> Command {
    let mut command = Command::new(bin.join(name));
    if is_root() {
        command.uid(UNPRIVILEGED.0).gid(UNPRIVILEGED.1);
    }
    command.env("LC_ALL", "C.UTF-8").env_remove("PGDATA");
    command
}

fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free loopback port: {e}"))
}

fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{what}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// A data directory made by `initdb` once per machine and PostgreSQL version, copied for
/// each server (a copy takes a tenth of an `initdb`).
fn template(bin: &Path) -> Result<PathBuf, String> {
    let tag = bin
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .unwrap_or("pg")
        .to_owned();
    let root = std::env::temp_dir();
    let template = root.join(format!("abr-pg-template-{tag}-{}", u8::from(is_root())));
    if template.join("PG_VERSION").exists() {
        return Ok(template);
    }
    let building = root.join(format!(
        "abr-pg-template-build-{}-{tag}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&building);
    std::fs::create_dir_all(&building).map_err(|e| format!("{}: {e}", building.display()))?;
    own(&building)?;
    let data = building.join("data");
    run(
        pg_command(bin, "initdb").arg("-D").arg(&data).args([
            "-A",
            "trust",
            "-U",
            "abr",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        ]),
        "initdb",
    )?;
    // Another test may have won the race: its template is as good.
    match std::fs::rename(&data, &template) {
        Ok(()) => {}
        Err(_) if template.join("PG_VERSION").exists() => {}
        Err(e) => return Err(format!("keeping the template: {e}")),
    }
    let _ = std::fs::remove_dir_all(&building);
    Ok(template)
}

/// Hands `dir` to the unprivileged user when root (it must own a data directory).
fn own(dir: &Path) -> Result<(), String> {
    if is_root() {
        std::os::unix::fs::chown(dir, Some(UNPRIVILEGED.0), Some(UNPRIVILEGED.1))
            .map_err(|e| format!("chown {}: {e}", dir.display()))?;
    }
    Ok(())
}

impl PgServer {
    /// Starts a server (blocking: call it before the runtime gets busy, or in
    /// `spawn_blocking`).
    ///
    /// # Errors
    /// No binaries, or the server did not start (with its log).
    pub fn start() -> Result<Self, String> {
        let bin = pg_bindir()?;
        let template = template(&bin)?;
        let dir = tempfile::Builder::new()
            .prefix("abr-pg-")
            .tempdir()
            .map_err(|e| format!("a temporary directory: {e}"))?
            .keep();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| e.to_string())?;
        own(&dir)?;
        let data = dir.join("data");
        let mut cp = Command::new("cp");
        cp.arg("-a").arg(&template).arg(&data);
        run(&mut cp, "copying the template data directory")?;
        let mut last = String::new();
        for _ in 0..5 {
            let port = free_port()?;
            let started = run(
                pg_command(&bin, "pg_ctl")
                    .arg("-D")
                    .arg(&data)
                    .arg("-l")
                    .arg(dir.join("log"))
                    .arg("-o")
                    .arg(format!(
                        "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off \
                         -c synchronous_commit=on -c full_page_writes=off -c max_connections=200",
                        dir.display()
                    ))
                    .args(["-w", "-t", "30", "start"]),
                "pg_ctl start",
            );
            match started {
                Ok(()) => {
                    let watchdog = watchdog(&dir, &data).ok();
                    return Ok(Self {
                        dir,
                        bin,
                        port,
                        watchdog,
                        databases: AtomicU32::new(0),
                    });
                }
                Err(e) => {
                    let log = std::fs::read_to_string(dir.join("log")).unwrap_or_default();
                    last = format!("{e}\n{log}");
                    // A port taken meanwhile: try another.
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        Err(last)
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its data directory (what it keeps at rest).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// Restarts it on the same data directory and port (blocking: `pg_ctl restart`, its
    /// fast mode: every open connection is closed, as a database's restart or failover
    /// closes its clients'); the server's start options are the first start's.
    ///
    /// # Errors
    /// It did not come back (with its log).
    pub fn restart(&self) -> Result<(), String> {
        run(
            pg_command(&self.bin, "pg_ctl")
                .arg("-D")
                .arg(self.data_dir())
                .arg("-l")
                .arg(self.dir.join("log"))
                .args(["-m", "fast", "-w", "-t", "30", "restart"]),
            "pg_ctl restart",
        )
        .map_err(|e| {
            let log = std::fs::read_to_string(self.dir.join("log")).unwrap_or_default();
            format!("{e}\n{log}")
        })
    }

    /// The URL of database `name` on it.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://abr@127.0.0.1:{}/{name}", self.port)
    }

    /// A new, empty database: its URL.
    ///
    /// # Errors
    /// The server refused it.
    pub async fn create_database(&self) -> Result<String, String> {
        let n = self.databases.fetch_add(1, Ordering::Relaxed);
        let name = format!("abr_test_{n}");
        let (client, connection) =
            tokio_postgres::connect(&self.url("postgres"), tokio_postgres::NoTls)
                .await
                .map_err(|e| e.to_string())?;
        let driver = tokio::spawn(connection);
        let created = client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .map_err(|e| e.to_string());
        drop(client);
        let _ = driver.await;
        created.map(|()| self.url(&name))
    }

    /// Runs SQL on database `name` (a test's look at the rows, a `CHECKPOINT`).
    ///
    /// # Errors
    /// The server refused it.
    pub async fn execute(
        &self,
        name: &str,
        sql: &str,
    ) -> Result<Vec<tokio_postgres::SimpleQueryMessage>, String> {
        let (client, connection) = tokio_postgres::connect(&self.url(name), tokio_postgres::NoTls)
            .await
            .map_err(|e| e.to_string())?;
        let driver = tokio::spawn(connection);
        let result = client.simple_query(sql).await.map_err(|e| e.to_string());
        drop(client);
        let _ = driver.await;
        result
    }

    /// The first row `sql` answers on database `name`, its values as text.
    ///
    /// # Errors
    /// The server refused it, or it answered no row.
    pub async fn query_row(&self, name: &str, sql: &str) -> Result<Vec<Option<String>>, String> {
        for message in self.execute(name, sql).await? {
            if let tokio_postgres::SimpleQueryMessage::Row(row) = message {
                return Ok((0..row.len())
                    .map(|i| row.get(i).map(str::to_owned))
                    .collect());
            }
        }
        Err(format!("no row: {sql}"))
    }

    /// Every byte under its data directory, after a `CHECKPOINT` (blocking): what it keeps
    /// at rest.
    pub fn at_rest(&self) -> Vec<u8> {
        let _ = run(
            pg_command(&self.bin, "psql")
                .args([
                    "-h",
                    "127.0.0.1",
                    "-U",
                    "abr",
                    "-d",
                    "postgres",
                    "-c",
                    "CHECKPOINT",
                ])
                .arg("-p")
                .arg(self.port.to_string()),
            "CHECKPOINT",
        );
        let mut bytes = Vec::new();
        let mut dirs = vec![self.data_dir()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if let Ok(content) = std::fs::read(&path) {
                    bytes.extend(content);
                }
            }
        }
        bytes
    }
}

/// A process that stops the server (immediate shutdown: SIGQUIT to the postmaster) and
/// removes its directory when this process is gone, in a process group of its own so that
/// a test runner killing the test's group does not take it along.
fn watchdog(dir: &Path, data: &Path) -> std::io::Result<Child> {
    let script = format!(
        "while [ -d /proc/{pid} ]; do sleep 1; done; \
         kill -QUIT \"$(head -1 '{pidfile}' 2>/dev/null)\" 2>/dev/null; sleep 1; rm -rf '{dir}'",
        pid = std::process::id(),
        pidfile = data.join("postmaster.pid").display(),
        dir = dir.display(),
    );
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let _ = run(
            pg_command(&self.bin, "pg_ctl")
                .arg("-D")
                .arg(self.data_dir())
                .args(["-m", "immediate", "-w", "-t", "30", "stop"]),
            "pg_ctl stop",
        );
        if let Some(mut watchdog) = self.watchdog.take() {
            let _ = watchdog.kill();
            let _ = watchdog.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
