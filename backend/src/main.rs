//! The `fleetdash` binary: everything lives in the library; see `cli`.

fn main() -> std::process::ExitCode {
    fleetdash::cli::main()
}
