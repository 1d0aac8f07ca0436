"""Generated from lesson 03 by tools/save_taught.py: edit the lesson, then run it.

The lesson: notebooks/03_resnet50_model_parallel.ipynb.
Each definition is the lesson's, with the lesson's imports of what it uses inside its body.
"""

__all__ = ["segment_models"]


def segment_models(model, cuts):
    """The sub-models between consecutive cut layers: from the input to the first cut's output,
    from there to the next, ..., from the last cut to the model's output. Unplaced; they share
    the model's layers and weights."""
    import keras

    ends = [model.get_layer(c).output for c in cuts] + list(model.outputs)
    starts = list(model.inputs) + ends[:-1]
    return [keras.Model(start, end) for start, end in zip(starts, ends, strict=True)]
