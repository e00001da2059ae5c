// An extension whose loading kills the extension host outright (no exit handler of the host's
// runs), as an out-of-memory kill or a crash would.
export default function () {
	process.kill(process.pid, "SIGKILL");
}
