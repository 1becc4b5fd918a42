#!/usr/bin/env python3
"""Where a tile's time goes on consumer warpgroup 0, from a trace of the traced plain variant
(`sm90_overlap --variants 15,16 --trace FILE`: role 2 holds one record per tile, overlap_mainloops.cuh
TileWord). Per tile, in us (each CTA's clock from its producer events):

  period    one tile's mma() entry to the next one's
  waits     the consumer's full-barrier waits inside mma() (data not there yet); first = the tile's first stage's
  mma       mma() entry to mma_tail()'s return, less the waits: the MMAs issued and drained
  acquire   mma_tail's return to store()'s entry (the store descriptor's acquire when the expert changed)
  store     store(): the accumulators through shared memory to the TMA stores, every subtile issued
  after     store()'s return to the next mma() entry: the scheduler's next tile, and on an expert change the
            next store descriptor's copy and release (release: that part alone)
  changes   the share of tiles followed by an expert change
  wg1_tail  warpgroup 1's mma_tail() return less warpgroup 0's (how much later the other half's MMAs end)
  wg1_store warpgroup 1's store() entry less warpgroup 0's; store1: warpgroup 1's store() duration

    analyze_tiles.py FILE [--skip-first N]

The first tile of each CTA is left out by default (its stages fill from nothing); the last has no
successor and is left out too."""
import argparse
import statistics as st

from analyze_trace import clock_ghz, load

(MMA_BEGIN, MMA_TAIL_END, STORE_BEGIN, STORE_END, ACQUIRE_END, RELEASE_BEGIN, RELEASE_END, K_TILES,
 MMA_TAIL_END1, STORE_BEGIN1, STORE_END1, MMA_BEGIN1) = range(12)
EVENTS_PER_TILE = 4


def tile_records(role):
    """Tile t's sixteen words from events 4t .. 4t + 3; stops at the first tile without a record."""
    tiles = []
    t = 0
    while any(EVENTS_PER_TILE * t + i in role for i in range(EVENTS_PER_TILE)):
        words = ()
        for i in range(EVENTS_PER_TILE):
            words += tuple(role.get(EVENTS_PER_TILE * t + i, (0, 0, 0, 0)))
        tiles.append(words)
        t += 1
    return tiles


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--skip-first", type=int, default=1)
    args = ap.parse_args()
    sms, ctas = load(args.trace)
    if len(ctas[0]) < 3:
        print("no tile records: trace the plain variant (16)")
        return 1
    cols = {k: [] for k in ("period", "waits", "first", "mma", "acquire", "store", "after", "release", "wg1_tail",
                            "wg1_store", "store1")}
    changes, counted, ghzs = 0, 0, []
    for roles in ctas:
        prod, cons, tiles_role = roles[0], roles[1], roles[2]
        ghz = clock_ghz(prod)
        if not ghz:
            continue
        ghzs.append(ghz)
        us = lambda c: c / ghz / 1000.0
        tiles = tile_records(tiles_role)
        stage = 0
        for t, r in enumerate(tiles):
            k = int(r[K_TILES])
            stages = range(stage, stage + k)
            stage += k
            if t < args.skip_first or t + 1 >= len(tiles) or not r[MMA_BEGIN] or not r[STORE_END]:
                continue
            nxt = tiles[t + 1]
            waits = [cons[i][1] - cons[i][0] for i in stages if i in cons]
            if len(waits) != k:
                continue  # past the stage events' capacity
            counted += 1
            cols["period"].append(us(nxt[MMA_BEGIN] - r[MMA_BEGIN]))
            cols["waits"].append(us(sum(waits)))
            cols["first"].append(us(waits[0]))
            cols["mma"].append(us(r[MMA_TAIL_END] - r[MMA_BEGIN] - sum(waits)))
            cols["acquire"].append(us(r[STORE_BEGIN] - r[MMA_TAIL_END]))
            cols["store"].append(us(r[STORE_END] - r[STORE_BEGIN]))
            cols["after"].append(us(nxt[MMA_BEGIN] - r[STORE_END]))
            if r[MMA_TAIL_END1] and r[STORE_END1]:
                cols["wg1_tail"].append(us(r[MMA_TAIL_END1] - r[MMA_TAIL_END]))
                cols["wg1_store"].append(us(r[STORE_BEGIN1] - r[STORE_BEGIN]))
                cols["store1"].append(us(r[STORE_END1] - r[STORE_BEGIN1]))
            if r[RELEASE_BEGIN]:
                changes += 1
                cols["release"].append(us(r[RELEASE_END] - r[RELEASE_BEGIN]))
    if not counted:
        print("no complete tiles")
        return 1
    print("tiles: %d over %d CTAs; clock GHz median %.3f; expert changes after %.0f%% of tiles"
          % (counted, len(ghzs), st.median(ghzs), 100.0 * changes / counted))
    print("%-8s %9s %9s %9s %9s %9s" % ("us", "mean", "median", "p10", "p90", "of period"))
    period = st.mean(cols["period"])
    for name, v in cols.items():
        if not v:
            continue
        q = st.quantiles(v, n=10) if len(v) > 1 else [v[0]] * 9
        share = st.mean(v) * (len(v) / counted) / period  # release: only on changes; wg1_*: not phases
        print("%-8s %9.3f %9.3f %9.3f %9.3f %8.1f%%" % (name, st.mean(v), st.median(v), q[0], q[-1], 100.0 * share))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
