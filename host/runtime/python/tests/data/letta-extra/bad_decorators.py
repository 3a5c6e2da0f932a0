from letta_evals.decorators import grader


@grader
def wrong_names(sample, answer):
    return None
