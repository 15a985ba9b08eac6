#!/usr/bin/env bash
# A fleet's journals in Kafka (modules/cli KafkaFleetBenchmarkTest, KafkaFollowLagBenchmarkTest), against a
# real single-node Apache Kafka (KRaft, child JVM):
# - a simulated cluster of NODES nodes (default 10) and REQUESTS requests (default 200) shipped by one
#   `ship --no-follow`: entries per second (and entries per node); a second `ship --no-follow` that finds
#   everything in the topic: its time and the records it read to resume (the partitions' tails), against a
#   scan of the whole topic; then `hangs` over the topic and over the
#   same journals on disk, ROUNDS rounds alternated (default 3), outputs checked identical, the ratio of the
#   medians;
# - the lag from a node's append to its journal to `serve --follow kafka://...` showing it on the page's
#   event stream, the journal followed by the shipper `node --ship` runs: SAMPLES ticks (default 200), p50/p99.
# Usage: benchmarks/kafka-fleet.sh [NODES [REQUESTS [ROUNDS [SAMPLES]]]]
set -euo pipefail
cd "$(dirname "$0")/.."
nodes=${1:-10}
requests=${2:-200}
rounds=${3:-3}
samples=${4:-200}
mvn -B -q -pl modules/cli -am -Dsurefire.failIfNoSpecifiedTests=false \
    -Dtest=KafkaFleetBenchmarkTest,KafkaFollowLagBenchmarkTest \
    -Dkvledger.kafka.bench=true -Dkvledger.kafka.nodes="$nodes" -Dkvledger.kafka.requests="$requests" \
    -Dkvledger.kafka.rounds="$rounds" -Dkvledger.kafka.lag.samples="$samples" -DtrimStackTrace=true test 2>&1 \
    | grep -E '^kafka fleet|FAIL|ERROR\]' || true
