"""Reads an OpenMetrics exposition (the file named by argv[1]) with the Prometheus
project's own parser, which refuses what the format does not allow, and prints every
sample as JSON: [name, labels, value]."""

import json
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families

with open(sys.argv[1], encoding="utf-8") as f:
    text = f.read()
samples = []
for family in text_string_to_metric_families(text):
    for sample in family.samples:
        samples.append([sample.name, sample.labels, sample.value])
json.dump(samples, sys.stdout)
