"""An example custom reward for GSM8K-style data (verl's NaiveRewardManager signature).

verl calls ``compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs)``
for every response and accepts a float or a dict with a ``score`` key.
"""

import re


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """1.0 when the last number in the response equals the ground truth, else 0.0."""
    numbers = re.findall(r"-?\d+(?:\.\d+)?", solution_str.replace(",", ""))
    if not numbers:
        return 0.0
    try:
        return 1.0 if float(numbers[-1]) == float(str(ground_truth).replace(",", "")) else 0.0
    except ValueError:
        return 0.0
