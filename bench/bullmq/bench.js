#!/usr/bin/env node
// BullMQ side of bench/bench_peers.py: the same no-op consumer and the same paced or full-speed
// producer as the Python peers, so the orchestrator can treat BullMQ like them.
//
//   node bench.js worker  <redis-url> <queue> <out-dir> <concurrency>
//   node bench.js produce <redis-url> <queue> <payload-bytes> <round> <n> <rate|0> <chunk>
//
// worker: a bullmq Worker whose processor records (now - job.data.ts) and, when the n-th job of a
// round has run, writes <out-dir>/<round>.json = {n, last, lat} (the same file the Python workers
// write). produce: adds n jobs {p: payload, ts, r: round, n} with Queue.addBulk in chunks of
// <chunk> (rate 0: as fast as possible; else paced at <rate> jobs/s), jobs removed on completion,
// and prints {"first": t, "end": t} (seconds since the epoch) on stdout.
'use strict';

const fs = require('fs');
const path = require('path');
const { performance } = require('perf_hooks');
const IORedis = require('ioredis');
const { Queue, Worker } = require('bullmq');

const nowS = () => (performance.timeOrigin + performance.now()) / 1000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function connect(url) {
  // maxRetriesPerRequest: null is what BullMQ requires for a worker's blocking connection.
  return new IORedis(url, { maxRetriesPerRequest: null });
}

async function worker(url, queue, outDir, concurrency) {
  const rounds = new Map();
  const processor = async (job) => {
    const now = nowS();
    const d = job.data;
    let st = rounds.get(d.r);
    if (st === undefined) {
      st = { count: 0, lat: [] };
      rounds.set(d.r, st);
    }
    st.count += 1;
    st.lat.push(now - d.ts);
    if (st.count >= d.n) {
      rounds.delete(d.r);
      const file = path.join(outDir, `${d.r}.json`);
      fs.writeFileSync(`${file}.tmp`, JSON.stringify({ n: st.count, last: nowS(), lat: st.lat }));
      fs.renameSync(`${file}.tmp`, file);
    }
  };
  const w = new Worker(queue, processor, { connection: connect(url), concurrency });
  w.on('error', (err) => console.error('worker error', err));
  const stop = async () => {
    await w.close();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  await w.waitUntilReady();
  console.log('ready');
}

async function produce(url, queue, bytes, round, n, rate, chunk) {
  const connection = connect(url);
  const q = new Queue(queue, {
    connection,
    defaultJobOptions: { removeOnComplete: true, removeOnFail: true },
  });
  await q.waitUntilReady();
  const payload = 'x'.repeat(bytes);
  let sent = 0;
  const first = nowS();
  const t0 = performance.now();
  while (sent < n) {
    let k;
    if (rate > 0) {
      const due = Math.min(n, Math.floor(((performance.now() - t0) / 1000) * rate) + 1) - sent;
      if (due <= 0) {
        await sleep(1);
        continue;
      }
      k = Math.min(due, chunk);
    } else {
      k = Math.min(chunk, n - sent);
    }
    const ts = nowS();
    const jobs = [];
    for (let i = 0; i < k; i++) jobs.push({ name: 'noop', data: { p: payload, ts, r: round, n } });
    await q.addBulk(jobs);
    sent += k;
  }
  const end = nowS();
  process.stdout.write(JSON.stringify({ first, end }) + '\n');
  await q.close();
  await connection.quit();
}

async function main() {
  const [mode, ...a] = process.argv.slice(2);
  if (mode === 'worker') {
    await worker(a[0], a[1], a[2], Number(a[3] || 1));
  } else if (mode === 'produce') {
    await produce(a[0], a[1], Number(a[2]), a[3], Number(a[4]), Number(a[5]), Number(a[6] || 100));
  } else {
    console.error('usage: node bench.js worker|produce ...');
    process.exit(2);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
