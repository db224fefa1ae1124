"""
Releasing a series of glucose readings
======================================

``dprivacy series`` releases a series of readings with noise on every reading, under a metric on the
values :cite:p:`Chatzikokolakis2013`: ε·d₁ protects a total change of the readings (a meal, an
injection), not the presence of a reading. This example releases the 52,281 readings of a continuous
glucose monitor in ``CGM.csv.gz`` and draws one day and the noise.
"""

# %%
# The release
# -----------
# ε = 0.5 per mg/dL (the readings are whole numbers: the unit is 1). ``--per day`` also reports the
# daily sums and means of the released readings, with their noise.

import json
import os
import subprocess
import sys
import tempfile

import bokeh_sampledata
import matplotlib.pyplot as plt
import numpy as np
import pyarrow.csv as pacsv

source = os.path.join(
    os.path.dirname(bokeh_sampledata.__file__), "_data", "CGM.csv.gz"
)
out = os.path.join(tempfile.mkdtemp(), "glucose.csv")
subprocess.run(
    [
        sys.executable,
        "-m",
        "dprivacy",
        "series",
        source,
        "-o",
        out,
        "--column",
        "glucose",
        "--time",
        "datetime",
        "--epsilon",
        "0.5",
        "--per",
        "day",
        "--seed",
        "5",
    ],
    check=True,
    stdout=subprocess.DEVNULL,
)

true = pacsv.read_csv(source)
released = pacsv.read_csv(out)
sidecar = json.load(open(out + ".dprivacy.json"))
print(released.column_names, released.num_rows, "readings")
print(
    "expected |error| per reading:",
    round(sidecar["expected_abs_error"], 2),
    "mg/dL",
)

# %%
# One day, and the error per reading
# ----------------------------------

t = true["datetime"].to_numpy()
day = (t >= np.datetime64("2010-03-25")) & (t < np.datetime64("2010-03-26"))
fig, axes = plt.subplots(
    1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [2, 1]}
)
axes[0].plot(
    t[day],
    released["glucose"].to_numpy()[day],
    lw=0.8,
    color="tab:red",
    label="released",
)
axes[0].plot(
    t[day],
    true["glucose"].to_numpy()[day],
    lw=0.8,
    color="black",
    label="true",
)
axes[0].set_ylabel("glucose (mg/dL)")
axes[0].set_title("25 March 2010")
axes[0].legend()
axes[0].tick_params(axis="x", labelrotation=30)
err = released["glucose"].to_numpy() - true["glucose"].to_numpy()
axes[1].hist(err, bins=np.arange(-12.5, 13.5, 1), color="tab:red")
axes[1].set_xlabel("released − true (mg/dL)")
axes[1].set_title("noise on every reading")
fig.tight_layout()

# %%
# At ε = 0.5 the noise on a reading is about 2 mg/dL, small beside the swings of a day, so the curve
# keeps its shape; what ε protects is a change of a few mg/dL in total. Protecting every reading at
# once (``--metric dinf``) would need ε/n per reading, noise that grows with the series' length.
print(f"measured mean |error|: {np.abs(err).mean():.2f} mg/dL")
