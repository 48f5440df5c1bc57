"""Compares two heterps-run reports epoch by epoch: loss, training
accuracy and (when evaluated) eval loss and AUC, exactly. Prints one line
saying they are the same, or the first epoch where they differ."""
import json
import sys

KEYS = ("loss", "train_accuracy", "eval_loss", "eval_auc")


def epochs(path):
    return [{k: e.get(k) for k in KEYS} for e in json.load(open(path))["epochs"]]


a, b = epochs(sys.argv[1]), epochs(sys.argv[2])
if a == b:
    print("the same losses and accuracies, epoch by epoch (%d epochs)" % len(a))
else:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            print("epoch %d differs: %s vs %s" % (i + 1, x, y))
            break
    else:
        print("different epoch counts: %d vs %d" % (len(a), len(b)))
