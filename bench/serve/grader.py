def grade(sample, item):
    return 1.0 if item["ground_truth"].lower() in sample["output_text"].lower() else 0.0
