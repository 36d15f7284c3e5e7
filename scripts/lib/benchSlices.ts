/**
 * The measuring loop of `bench-concurrency` (both modes): a side is a set of server processes
 * and the clients that drive them with one unit of work each (a complete flow, or one no-op
 * `tools/call`); a slice runs every client of one side in a loop for a fixed time and adds to
 * the side its rate, its latencies, and the CPU time of its servers (from /proc), of the
 * driving process and of the PostgreSQL server's processes when the bench started one.
 */
import { readdirSync } from 'node:fs';
import type { Client } from '@modelcontextprotocol/client';
import { type Child, cpuTimes, procStat, ticksToMs } from './benchServers.js';

/**
 * One measured side, e.g.
 * `{ name: 'baton serve (no ledger)', servers: [child], clients: [32 clients], once: (c) => deployOnce(c, ...) }`
 * and the sums its slices add: `flows` units done, `userMs`/`systemMs` of its servers, `driverMs`
 * of this process, `databaseMs` of PostgreSQL, one rate (units/s) per slice, one latency per unit.
 */
export interface Side {
  readonly name: string;
  readonly servers: Child[];
  readonly clients: Client[];
  /** One unit of work on one client (a flow, or one call), checked. */
  readonly once: (client: Client) => Promise<void>;
  readonly rates: number[];
  readonly latencies: number[];
  flows: number;
  userMs: number;
  systemMs: number;
  /** CPU time of this (driving) process during the side's slices: the clients' share. */
  driverMs: number;
  /** CPU time of the PostgreSQL server's processes during the side's slices (0 without one). */
  databaseMs: number;
}

/** A side with nothing measured yet. */
export function newSide(
  name: string,
  servers: Child[],
  clients: Client[],
  once: (client: Client) => Promise<void>,
): Side {
  return {
    name,
    servers,
    clients,
    once,
    rates: [],
    latencies: [],
    flows: 0,
    userMs: 0,
    systemMs: 0,
    driverMs: 0,
    databaseMs: 0,
  };
}

/**
 * CPU time (ms) of a PostgreSQL server: its postmaster, its live children (backends, WAL
 * writer, checkpointer...) and the children it has reaped. 0 without a postmaster.
 */
export function databaseCpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  let ticks = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = procStat(entry);
    const self = Number(entry) === pid;
    if (!fields || (!self && Number(fields[1]) !== pid)) continue;
    // utime and stime, and for the postmaster also cutime and cstime (its reaped children).
    ticks += Number(fields[11]) + Number(fields[12]) + (self ? Number(fields[13]) + Number(fields[14]) : 0);
  }
  return ticksToMs(ticks);
}

/** Warm-up: `count` units spread over the side's clients, not measured. */
export async function warm(side: Side, count: number): Promise<void> {
  let left = count;
  await Promise.all(
    side.clients.map(async (client) => {
      while (left-- > 0) await side.once(client);
    }),
  );
}

/** One slice: every client of the side loops units until `ms` have passed. */
export async function slice(side: Side, ms: number, postmaster: number | undefined): Promise<void> {
  const pids = side.servers.map((s) => s.child.pid!);
  const before = pids.map(cpuTimes);
  // Read before the driver's own CPU starts counting (the /proc walk is the driver's work).
  const database = databaseCpuMs(postmaster);
  const driver = process.cpuUsage();
  const start = performance.now();
  const end = start + ms;
  let flows = 0;
  await Promise.all(
    side.clients.map(async (client) => {
      while (performance.now() < end) {
        const began = performance.now();
        await side.once(client);
        side.latencies.push(performance.now() - began);
        flows++;
      }
    }),
  );
  const elapsed = performance.now() - start;
  const driven = process.cpuUsage(driver);
  side.driverMs += (driven.user + driven.system) / 1000;
  side.databaseMs += databaseCpuMs(postmaster) - database;
  pids.map(cpuTimes).forEach((after, i) => {
    side.userMs += after.user - before[i]!.user;
    side.systemMs += after.system - before[i]!.system;
  });
  side.flows += flows;
  side.rates.push(flows / (elapsed / 1000));
}

/** Server CPU (user + system) per unit of a side, in ms. */
export const cpuPerUnit = (side: Side) => (side.userMs + side.systemMs) / side.flows;
