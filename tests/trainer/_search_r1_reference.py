"""Search-R1's string functions, copied verbatim (PeterGriffinJin/Search-R1 @a14dc3a), the reference that
tests/trainer/test_search_r1_protocol.py compares tirlab's search_r1 protocol with. Only what ties them to a
batch, a tokenizer or a search server is taken out, as each comment says; the code is left as written, so the
linter's and formatter's rules are off here."""
# ruff: noqa: E501, B007, B905, F541
# fmt: off

import re


def reference_cut(responses_str):
    # search_r1/llm_agent/generation.py:61-66, the list comprehension of _postprocess_responses (the decoding
    # and tokenizing around it left out).
    responses_str = [resp.split('</search>')[0] + '</search>'
             if '</search>' in resp
             else resp.split('</answer>')[0] + '</answer>'
             if '</answer>' in resp
             else resp
             for resp in responses_str]
    return responses_str


def reference_postprocess_predictions(predictions):
    # search_r1/llm_agent/generation.py:407-436 (postprocess_predictions, without self).
    actions = []
    contents = []

    for prediction in predictions:
        if isinstance(prediction, str): # for llm output
            pattern = r'<(search|answer)>(.*?)</\1>'
            match = re.search(pattern, prediction, re.DOTALL)
            if match:
                content = match.group(2).strip()  # Return only the content inside the tags
                action = match.group(1)
            else:
                content = ''
                action = None
        else:
            raise ValueError(f"Invalid prediction type: {type(prediction)}")

        actions.append(action)
        contents.append(content)

    return actions, contents


def reference_passages2string(retrieval_result):
    # search_r1/llm_agent/generation.py:460-469 (_passages2string, without self).
    format_reference = ''
    for idx, doc_item in enumerate(retrieval_result):

        content = doc_item['document']['contents']
        title = content.split("\n")[0]
        text = "\n".join(content.split("\n")[1:])
        format_reference += f"Doc {idx+1}(Title: {title}) {text}\n"

    return format_reference


def reference_execute_predictions(predictions, results, active_mask=None, do_search=True):
    # search_r1/llm_agent/generation.py:353-405 (execute_predictions): self.batch_search is
    # generation.py:446-448 with the server's answer given as `results`; the pad_token argument is unused there.
    # It also returns the queries it searches for.
    cur_actions, contents = reference_postprocess_predictions(predictions)
    next_obs, dones, valid_action, is_search = [], [], [], []

    search_queries = [content for action, content in zip(cur_actions, contents) if action == 'search']
    if do_search:
        search_results = [reference_passages2string(result) for result in results]
        assert len(search_results) == sum([1 for action in cur_actions if action == 'search'])
    else:
        search_results = [''] * sum([1 for action in cur_actions if action == 'search'])

    for i, (action, active) in enumerate(zip(cur_actions, active_mask)):

        if not active:
            next_obs.append('')
            dones.append(1)
            valid_action.append(0)
            is_search.append(0)
        else:
            if action == 'answer':
                next_obs.append('')
                dones.append(1)
                valid_action.append(1)
                is_search.append(0)
            elif action == 'search':
                next_obs.append(f'\n\n<information>{search_results.pop(0).strip()}</information>\n\n')
                dones.append(0)
                valid_action.append(1)
                is_search.append(1)
            else:
                next_obs.append(f'\nMy previous action is invalid. \
If I want to search, I should put the query between <search> and </search>. \
If I want to give the final answer, I should put the answer between <answer> and </answer>. Let me try again.\n')
                dones.append(0)
                valid_action.append(0)
                is_search.append(0)

    assert len(search_results) == 0

    return next_obs, dones, valid_action, is_search, search_queries


def reference_make_prefix(dp, template_type):
    # scripts/data_process/nq_search.py:26-39 (make_prefix).
    question = dp['question']

    # NOTE: also need to change reward_score/countdown.py
    if template_type == 'base':
        """This works for any base model"""
        prefix = f"""Answer the given question. \
You must conduct reasoning inside <think> and </think> first every time you get new information. \
After reasoning, if you find you lack some knowledge, you can call a search engine by <search> query </search> and it will return the top searched results between <information> and </information>. \
You can search as many times as your want. \
If you find no further external knowledge needed, you can directly provide the answer inside <answer> and </answer>, without detailed illustrations. For example, <answer> Beijing </answer>. Question: {question}\n"""
    else:
        raise NotImplementedError
    return prefix
