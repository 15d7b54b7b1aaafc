"""Jupyter notebooks of the dataroom, as data (rendered by render.render_ipynb)."""

LEAK_CLASSIFIER_EVALUATION = [
    {"type": "markdown", "source": """
# LeakNet-GBT v3 — offline evaluation

Data Science team (A. Krishnaswami, R. Falkenrath). Run on 18 August 2025 before the production rollout of
v3 on 1 September 2025. Compares v3 with the model in production at the time (v2).

The labelled set contains 18,240 acoustic events from 11 utilities, each confirmed by a field crew as a leak or
as a non-leak noise (pumps, traffic, customer usage). The test split (20%, 3,648 events) holds out whole pressure
zones so that no zone appears in both training and test data.
"""},
    {"type": "code", "source": """
import pandas as pd
events = pd.read_parquet("s3://qhm-ds-datasets/leak-events/v2025-08-01/events.parquet")
print(len(events), events["utility_id"].nunique())
print(events["label"].value_counts().to_dict())
""", "outputs": ["18240 11\n{'non_leak': 12916, 'leak': 5324}"]},
    {"type": "code", "source": """
train, test = split_by_zone(events, test_fraction=0.2, seed=7)
print(len(train), len(test))
""", "outputs": ["14592 3648"]},
    {"type": "code", "source": """
for name, model in {"v2": load_model("leaknet-gbt-v2"), "v3": load_model("leaknet-gbt-v3")}.items():
    m = evaluate(model, test, threshold=0.5)
    print(f"{name}: precision={m.precision:.3f} recall={m.recall:.3f} f1={m.f1:.3f} "
          f"false_alarms_per_100km_week={m.false_alarm_rate:.1f}")
""", "outputs": ["v2: precision=0.861 recall=0.842 f1=0.851 false_alarms_per_100km_week=1.1\n"
                 "v3: precision=0.912 recall=0.874 f1=0.893 false_alarms_per_100km_week=0.6"]},
    {"type": "markdown", "source": """
## Recall by pipe material (v3)

Recall is much lower on plastic mains, where the sound of a leak fades within about 120 metres. This is the main
motivation for the in-pipe hydrophone of TideLine 4.
"""},
    {"type": "code", "source": """
print(recall_by(test, model_v3, by="pipe_material").round(2).to_string())
""", "outputs": ["pipe_material\ncast_iron        0.93\nductile_iron     0.91\nsteel            0.90\n"
                 "asbestos_cement  0.84\npvc              0.71\npolyethylene     0.64"]},
    {"type": "markdown", "source": """
## Conclusion

v3 raises precision from 0.861 to 0.912 and recall from 0.842 to 0.874, and roughly halves false alarms
(1.1 to 0.6 per 100 km of main per week). Recommendation: promote v3 to production on 1 September 2025.
"""},
]

NOTEBOOKS = {
    "06_tech/leak_classifier_evaluation.ipynb": LEAK_CLASSIFIER_EVALUATION,
}
