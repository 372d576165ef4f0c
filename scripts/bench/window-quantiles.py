#!/usr/bin/env python3
"""Where a benchmark window's time went, from two /metrics pages of gpupool serve.

    window-quantiles.py BEFORE AFTER

For the window between the pages it prints the p50 and p99 (interpolated inside the bucket, as
Prometheus's histogram_quantile does) of
  - the submissions as the server timed them (gpupool_http_request_duration_seconds of
    POST /api/pool/{pool}/workflow, code 200: from the request's arrival to its reply), and
  - how long a group commit's oldest write waited in the queue for the commit before it
    (gpupool_store_group_commit_wait_seconds), and
  - the store's committed write transactions (gpupool_store_transaction_seconds), with the mean
    writes per group commit, and
  - how late the I/O loops' probe timers fired (gpupool_http_loop_lag_seconds): the p99, and the
    bucket the latest one fell in (how long a request could have waited in its socket, unseen
    by the server's own timing).
bench-http.sh prints it under wrk's figures of the paced submissions: wrk's latency minus the
server's is the client's and the kernel's; the server's minus the wait and the transaction is
the server's own work and its threads' queueing.
"""
import sys

SUBMISSIONS = ('gpupool_http_request_duration_seconds_bucket{route="/api/pool/{pool}/workflow",'
               'method="POST",code="200",le="')
WAITS = 'gpupool_store_group_commit_wait_seconds_bucket{le="'
WRITES = 'gpupool_store_transaction_seconds_bucket{kind="write",outcome="ok",le="'
LAG = 'gpupool_http_loop_lag_seconds_bucket{le="'


def read_page(path):
    with open(path) as page:
        return page.read().splitlines()


def buckets(lines, prefix):
    found = {}
    for line in lines:
        if line.startswith(prefix):
            bound, value = line[len(prefix):].split('"} ')
            found[float('inf') if bound == '+Inf' else float(bound)] = float(value)
    return found


def plain(lines, name):
    for line in lines:
        if line.startswith(name + ' '):
            return float(line.split()[1])
    return 0.0


def quantile(q, cumulative):
    rank = q * cumulative[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in cumulative:
        if count >= rank:
            if bound == float('inf'):
                return lower_bound
            inside = count - lower_count
            return lower_bound + (bound - lower_bound) * ((rank - lower_count) / inside)
        lower_bound, lower_count = bound, count
    return lower_bound


def window(before, after, prefix):
    """(count, p50 ms, p99 ms) of the observations between the pages, or None."""
    old, new = buckets(before, prefix), buckets(after, prefix)
    cumulative = sorted((bound, count - old.get(bound, 0.0)) for bound, count in new.items())
    if not cumulative or cumulative[-1][1] <= 0:
        return None
    return (cumulative[-1][1], 1000 * quantile(0.5, cumulative), 1000 * quantile(0.99, cumulative))


def worst(before, after, prefix):
    """The bucket bound (ms) the slowest observation between the pages fell under, or None."""
    old, new = buckets(before, prefix), buckets(after, prefix)
    grown = sorted(bound for bound, count in new.items() if count - old.get(bound, 0.0) > 0)
    if not grown:
        return None
    # Cumulative buckets: the slowest observation is in the lowest bucket holding all of them.
    total = new[grown[-1]] - old.get(grown[-1], 0.0)
    return 1000 * next(b for b in grown if new[b] - old.get(b, 0.0) >= total)


def main():
    before, after = read_page(sys.argv[1]), read_page(sys.argv[2])
    parts = []
    for label, prefix in (('server', SUBMISSIONS), ('commit wait', WAITS),
                          ('store writes', WRITES)):
        seen = window(before, after, prefix)
        parts.append('%s: none' % label if seen is None else
                     '%s: n=%d p50=%.2fms p99=%.2fms' % ((label,) + seen))
    name = 'gpupool_store_group_commit_writes'
    commits = plain(after, name + '_count') - plain(before, name + '_count')
    writes = plain(after, name + '_sum') - plain(before, name + '_sum')
    if commits > 0:
        parts.append('writes/group commit=%.1f' % (writes / commits))
    lag, slowest = window(before, after, LAG), worst(before, after, LAG)
    if lag is not None:
        parts.append('loop lag: p99=%.2fms max%s' % (lag[2], ' over 1 s' if slowest == float('inf')
                                                       else '<=%gms' % slowest))
    print('; '.join(parts))


if __name__ == '__main__':
    main()
