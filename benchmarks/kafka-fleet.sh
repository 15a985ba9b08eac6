#!/usr/bin/env bash
# A fleet's journals in Kafka (modules/cli KafkaFleetBenchmarkTest): a simulated cluster of NODES
# nodes (default 10) and REQUESTS requests (default 200) shipped by one `ship --no-follow` to a real
# single-node Apache Kafka (KRaft, child JVM): entries per second; then `hangs` over the topic and
# over the same journals on disk, ROUNDS rounds alternated (default 3), outputs checked identical,
# the ratio of the medians. Usage: benchmarks/kafka-fleet.sh [NODES [REQUESTS [ROUNDS]]]
set -euo pipefail
cd "$(dirname "$0")/.."
nodes=${1:-10}
requests=${2:-200}
rounds=${3:-3}
mvn -B -q -pl modules/cli -am -Dsurefire.failIfNoSpecifiedTests=false -Dtest=KafkaFleetBenchmarkTest \
    -Dkvledger.kafka.bench=true -Dkvledger.kafka.nodes="$nodes" -Dkvledger.kafka.requests="$requests" \
    -Dkvledger.kafka.rounds="$rounds" -DtrimStackTrace=true test 2>&1 | grep -E '^kafka fleet|FAIL|ERROR\]' || true
