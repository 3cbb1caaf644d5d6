// The real node-redlock (v5, over ioredis), one operation per run, for the migration test
// (tests/integration/peer_migration_test.cpp): it acts on the same masters as redlock-cpp.
//   node peer.mjs PORT,PORT,... acquire RESOURCE TTL_MS [KEY_PREFIX]   stdout: the lock's value
//   node peer.mjs PORT,PORT,... release RESOURCE VALUE [KEY_PREFIX]
// Exit 0 when done, 1 when refused (held by another, or not held), 2 on a usage error.
// Every client is closed before exiting, once every node has answered; nothing retries
// (retryCount 0).
import Redis from "ioredis";
import Redlock, { Lock } from "redlock";

const [ports, verb, resource, arg, keyPrefix] = process.argv.slice(2);
if (!ports || !verb || !resource || !arg) {
  console.error("usage: peer.mjs PORTS acquire RESOURCE TTL_MS | release RESOURCE VALUE [PREFIX]");
  process.exit(2);
}
const clients = ports.split(",").map(
  (port) =>
    new Redis({
      host: "127.0.0.1",
      port: Number(port),
      keyPrefix: keyPrefix || undefined,
      lazyConnect: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 2000,
    }),
);
const redlock = new Redlock(clients, { retryCount: 0, driftFactor: 0.01 });
let code = 0;
// node-redlock settles at the quorum, while the last node's vote may still be on its way: a
// release answered NOSCRIPT there sends its EVAL only then. A service keeps its connections, so
// that vote lands; this one-shot process waits for every vote before it closes them.
const allVotes = (attempts) => Promise.all((attempts || []).map((a) => Promise.resolve(a)));
try {
  // Connected to every node first, as a long-running service is: node-redlock decides at the
  // quorum, and a command still queued for a node that is connecting would be dropped when
  // this one-shot process closes its clients.
  await Promise.race([
    Promise.all(
      clients.map((c) => (c.status === "ready" ? null : new Promise((r) => c.once("ready", r)))),
    ),
    new Promise((r) => setTimeout(r, 3000)),
  ]);
  if (verb === "acquire") {
    const lock = await redlock.acquire([resource], Number(arg));
    await allVotes(lock.attempts);
    process.stdout.write(lock.value + "\n");
  } else if (verb === "release") {
    const { attempts } = await redlock.release(new Lock(redlock, [resource], arg, [], 0));
    await allVotes(attempts);
    process.stdout.write("released\n");
  } else {
    console.error(`unknown verb ${verb}`);
    code = 2;
  }
} catch (e) {
  console.error(`${verb} refused: ${e && e.message}`);
  code = 1;
  await allVotes(e && e.attempts);
} finally {
  await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
}
process.exit(code);
