#!/usr/bin/env python3
"""Reads a trace written by `sm90_overlap --trace FILE` and says, per CTA and over all CTAs, where
the producer and the consumer warpgroup spent their time, how long each stage's bytes took from
the TMA issue to their arrival, and how many stages were in flight.

    analyze_trace.py FILE [--cta N] [--events K]

Clock cycles are converted to microseconds with each CTA's own clock rate, taken from its producer
events (clock64 against globaltimer)."""
import argparse
import struct
import statistics as st


def load(path):
    """Per CTA, a list of roles (producer, consumer stages, and where traced, consumer tiles), each a
    dict of event index -> words. The header's fourth int is the role count (0 in older traces: 2)."""
    with open(path, "rb") as f:
        sms, events, words, nroles = struct.unpack("<4i", f.read(16))
        data = f.read()
    nroles = nroles or 2
    vals = struct.unpack("<%dQ" % (len(data) // 8), data)
    ctas = []
    for cta in range(sms):
        roles = []
        for role in range(nroles):
            base = (cta * nroles + role) * events * words
            evs = {}
            for i in range(events):
                e = vals[base + i * words: base + (i + 1) * words]
                if e[0] or e[1]:
                    evs[i] = e
            roles.append(evs)
        ctas.append(roles)
    return sms, ctas


def clock_ghz(prod):
    """Cycles per ns from the producer's (clock64 end, globaltimer end) pairs."""
    keys = sorted(prod)
    if len(keys) < 2:
        return None
    a, b = prod[keys[0]], prod[keys[-1]]
    if b[2] <= a[2]:
        return None
    return (b[1] - a[1]) / (b[2] - a[2])


def summarize(prod, cons, ghz):
    common = sorted(set(prod) & set(cons))
    if not common:
        return None
    us = lambda cycles: cycles / ghz / 1000.0
    span = us(max(cons[i][2] for i in common) - min(prod[i][0] for i in common))
    p_wait = us(sum(prod[i][1] - prod[i][0] for i in common))
    c_wait = us(sum(cons[i][1] - cons[i][0] for i in common))
    c_busy = us(sum(cons[i][2] - cons[i][1] for i in common))
    # Issue to arrival, for stages the consumer was already waiting for (else arrival is unseen).
    lat = [us(cons[i][1] - prod[i][1]) for i in common if cons[i][1] - cons[i][0] > 200]
    # Stages in flight when each was issued: issued before it and not yet arrived.
    inflight = []
    for i in common:
        t = prod[i][1]
        inflight.append(sum(1 for j in common if j < i and cons[j][1] > t))
    return dict(stages=len(common), span=span, p_wait=p_wait, c_wait=c_wait, c_busy=c_busy,
                lat_med=st.median(lat) if lat else float("nan"), lat_n=len(lat),
                inflight=st.mean(inflight))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--cta", type=int, default=0)
    ap.add_argument("--events", type=int, default=40)
    args = ap.parse_args()
    sms, ctas = load(args.trace)
    rows = []
    for cta, roles in enumerate(ctas):
        prod, cons = roles[0], roles[1]
        ghz = clock_ghz(prod)
        if ghz:
            s = summarize(prod, cons, ghz)
            if s:
                rows.append((cta, ghz, s))
    if not rows:
        print("no events")
        return
    print("CTAs with events: %d of %d" % (len(rows), sms))
    keys = ["stages", "span", "p_wait", "c_wait", "c_busy", "lat_med", "inflight"]
    print("%-10s %s" % ("", " ".join("%9s" % k for k in keys)))
    for name, f in (("median", st.median), ("min", min), ("max", max)):
        print("%-10s %s" % (name, " ".join("%9.2f" % f([r[2][k] for r in rows]) for k in keys)))
    print("clock GHz: median %.3f" % st.median(r[1] for r in rows))
    print("(span, waits, busy, latency in us; p_wait = producer blocked on free stages, c_wait = "
          "consumer blocked on data, c_busy = consumer from data to the previous stage's release)")

    cta, ghz, _ = next(r for r in rows if r[0] == args.cta) if any(r[0] == args.cta for r in rows) else rows[0]
    prod, cons = ctas[cta][0], ctas[cta][1]
    common = sorted(set(prod) & set(cons))
    t0 = min(prod[i][0] for i in common)
    us = lambda c: (c - t0) / ghz / 1000.0
    print("\nCTA %d, first %d stages (us from its first acquire):" % (cta, args.events))
    print("%5s %4s %9s %9s %9s %9s %9s" % ("stage", "k", "acq", "issued", "wait", "arrived", "released"))
    for i in common[: args.events]:
        p, c = prod[i], cons[i]
        print("%5d %4d %9.2f %9.2f %9.2f %9.2f %9.2f" % (i, p[3], us(p[0]), us(p[1]), us(c[0]), us(c[1]), us(c[2])))


if __name__ == "__main__":
    main()
