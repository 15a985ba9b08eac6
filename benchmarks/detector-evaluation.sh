#!/usr/bin/env bash
# The hang detectors on simulated fault families (modules/sim DetectorEvaluation): every cluster
# shape, SEEDS seeds per family (default 20), REQUESTS requests per run (default 40). Prints, per
# family, the damaged requests and how many findings named with a class the fault can cause,
# named otherwise, missed, and the false alarms. Usage: benchmarks/detector-evaluation.sh [SEEDS [REQUESTS]]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-20}
requests=${2:-40}
mvn -B -q -pl modules/sim -am -Dsurefire.failIfNoSpecifiedTests=false -Dtest=DetectorEvaluationTest \
    -Dkvledger.eval.seeds="$seeds" -Dkvledger.eval.requests="$requests" -Dkvledger.eval.every-shape=true \
    -DtrimStackTrace=true test 2>&1 | sed -n '/^detector evaluation/,/^\[/p'
