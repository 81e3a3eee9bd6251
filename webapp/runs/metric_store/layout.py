"""The shape of the rollup tables, which the store's writes and its chart reads both follow."""

# Each width divides the next: a bucket is the union of RATIO buckets of the width below. Ratio 4,
# not 16: a chart reads at most 4 rollups per point rather than 16 (measured with 16-step buckets
# at the narrowest: 40 keys x 500 points of a 1,000,000-step run, 156,000 rollups in 290 ms with
# 16, 39,000 in 105 ms with 4). 32 steps at the narrowest, not 16: a 100-step batch of 40 keys
# merges 165 rows rather than 280 (a third of what rollups added to an ingest request), and
# readers still take rollups once a series has max_points / 2 buckets of 32 steps.
WIDTHS = (32, 128, 512, 2048, 8192, 32768, 131072)
RATIO = 4

# A rollup's columns after (series_id, width, bucket), in the order an accumulator holds them
# after its bucket.
COLUMNS = (
    "n", "first_step", "last_step", "time_step", "last_value", "min_value", "max_value", "time_value", "time_us",
)  # fmt: skip


def columns(prefix: str = "") -> str:
    return ", ".join(prefix + column for column in COLUMNS)


# Microseconds since the Unix epoch, exactly (extract gives numeric).
US_SQL = "(extract(epoch FROM {0}) * 1000000)::bigint"
