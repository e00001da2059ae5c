"""The original Pi for the side-by-side scripts: which edition to install with which of the
conformance kit's install scripts, and which Pi a given `pi` command is (so every ratio printed
says which Pi it is against; Pi 1.5.2 starts slower than 0.73.1)."""
import pathlib
import subprocess

KIT = pathlib.Path(__file__).resolve().parent.parent.parent / "conformance"

# Each edition's install script; it installs into a folder with node_modules/.bin/pi.
INSTALLERS = {"1.5.2": "install-pi-1.5.2.sh", "0.73.1": "install-pi.sh"}
DEFAULT_EDITION = "1.5.2"


def add_edition_argument(parser):
    parser.add_argument("--edition", choices=sorted(INSTALLERS), default=DEFAULT_EDITION,
                        help="which original to install when none is given (default: %(default)s)")


def install(edition, folder):
    """Installs that edition into `folder`; returns its `pi` command."""
    subprocess.run(["bash", str(KIT / INSTALLERS[edition]), str(folder)], check=True,
                   stdout=subprocess.DEVNULL)
    return pathlib.Path(folder) / "node_modules" / ".bin" / "pi"


def version(pi):
    """What `pi --version` prints (0.73.1 prints it on stderr, 1.5.2 on stdout)."""
    proc = subprocess.run([str(pi), "--version"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=120)
    return (proc.stdout.decode().strip() or proc.stderr.decode().strip()).splitlines()[-1]
